package workflowreservation

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// recentRejection is how long after this plugin turned a pod away a release
// of room activates it: the window in which the pod may have been retried
// on the scheduler's own event for the release and rejected again because
// the plugin's handler had not caught up yet.
const recentRejection = 5 * time.Second

// waitingPods remembers the pods this plugin turned away. When an informer
// event frees reserved room (a runner or workflow pod gone, a claim smaller
// than its reservation), those turned away just now are activated at once:
// the scheduler may have handled its own event for that change before the
// plugin's store caught up, and would otherwise leave them waiting for the
// next periodic flush. Pods turned away earlier are the QueueingHints' to
// requeue; activating every waiting pod on every release would move them
// all past their backoff, a scheduling cycle each, for every job start and
// end in a busy cluster. Releases no cluster event announces (the
// reconciler's, a job without a container) activate every waiting pod.
//
// A release can also land during the cycle that turns a pod away, after its
// Filter saw the room held and before PostFilter remembers the pod; the
// scheduler's event for the change was spent on that very cycle. freed
// counts the releases, so that PostFilter can tell (turnedAway).
type waitingPods struct {
	mu    sync.Mutex
	pods  map[types.UID]waitingPod
	freed uint64
}

type waitingPod struct {
	pod      *v1.Pod
	rejected time.Time
}

func (w *waitingPods) add(pod *v1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods == nil {
		w.pods = map[types.UID]waitingPod{}
	}
	w.pods[pod.UID] = waitingPod{pod: pod, rejected: time.Now()}
}

// releases returns the count of releases so far, for turnedAway.
func (w *waitingPods) releases() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.freed
}

// turnedAway remembers a pod this plugin's Filter turned away in a cycle
// that began when releases() was seen, and reports whether room was freed
// since: then the pod must be activated now, because the release's
// activation ran before the pod was remembered.
func (w *waitingPods) turnedAway(pod *v1.Pod, seen uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods == nil {
		w.pods = map[types.UID]waitingPod{}
	}
	w.pods[pod.UID] = waitingPod{pod: pod, rejected: time.Now()}
	return w.freed != seen
}

func (w *waitingPods) remove(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, uid)
}

// matching returns the waiting pods for which match is true, keyed for
// Handle.Activate.
func (w *waitingPods) matching(match func(*v1.Pod, time.Time) bool) map[string]*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.matchingLocked(match)
}

// freedRoom counts a release of room and returns the waiting pods for which
// match is true. Counting and matching under one lock make every pod turned
// away either matched here or told by turnedAway.
func (w *waitingPods) freedRoom(match func(*v1.Pod, time.Time) bool) map[string]*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freed++
	return w.matchingLocked(match)
}

func (w *waitingPods) matchingLocked(match func(*v1.Pod, time.Time) bool) map[string]*v1.Pod {
	pods := map[string]*v1.Pod{}
	for _, p := range w.pods {
		if match(p.pod, p.rejected) {
			pods[p.pod.Namespace+"/"+p.pod.Name] = p.pod
		}
	}
	return pods
}

// activateWaiting requeues the pods turned away within recentRejection.
func (pl *WorkflowReservation) activateWaiting(logger klog.Logger) {
	since := time.Now().Add(-recentRejection)
	pl.activate(logger, pl.sh.waiting.freedRoom(func(_ *v1.Pod, rejected time.Time) bool { return rejected.After(since) }))
}

// activateAllWaiting requeues every pod turned away.
func (pl *WorkflowReservation) activateAllWaiting(logger klog.Logger) {
	pl.activate(logger, pl.sh.waiting.freedRoom(func(*v1.Pod, time.Time) bool { return true }))
}

func (pl *WorkflowReservation) activate(logger klog.Logger, pods map[string]*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	logger.V(4).Info("Reserved room freed, activating waiting pods", "count", len(pods))
	pl.handle.Activate(logger, pods)
}
