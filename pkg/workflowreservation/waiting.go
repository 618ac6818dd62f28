package workflowreservation

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// waitingPods remembers the pods this plugin turned away. When an informer
// event frees reserved room (a runner or workflow pod gone, a claim smaller
// than its reservation), they are activated at once: the scheduler may have
// handled its own event for that change before the plugin's store caught up,
// and would otherwise leave them waiting for the next periodic flush.
type waitingPods struct {
	mu   sync.Mutex
	pods map[types.UID]*v1.Pod
}

func (w *waitingPods) add(pod *v1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods == nil {
		w.pods = map[types.UID]*v1.Pod{}
	}
	w.pods[pod.UID] = pod
}

func (w *waitingPods) remove(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, uid)
}

// matching returns the waiting pods for which match is true, keyed for
// Handle.Activate.
func (w *waitingPods) matching(match func(*v1.Pod) bool) map[string]*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	pods := map[string]*v1.Pod{}
	for _, p := range w.pods {
		if match(p) {
			pods[p.Namespace+"/"+p.Name] = p
		}
	}
	return pods
}

// activateWaiting requeues every waiting pod.
func (pl *WorkflowReservation) activateWaiting(logger klog.Logger) {
	pods := pl.sh.waiting.matching(func(*v1.Pod) bool { return true })
	if len(pods) == 0 {
		return
	}
	logger.V(4).Info("Reserved room freed, activating waiting pods", "count", len(pods))
	pl.handle.Activate(logger, pods)
}
