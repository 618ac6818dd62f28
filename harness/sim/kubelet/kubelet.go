package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/sim/retry"
)

// Kubelet plays the kubelet of every Node: it admits or rejects each pod
// bound to a node the moment it sees it, in the order it sees them, against
// the pods it admitted before (not the scheduler's view), reports admitted
// pods Running and ends them when told their containers exited. Its status
// writes and deletion confirmations are retried until they go through, as
// the kubelet's status manager does, so an apiserver restart loses none.
type Kubelet struct {
	client kubernetes.Interface
	nodes  corelisters.NodeLister
	pods   corelisters.PodLister
	writes *retry.Queue

	mu sync.Mutex
	// admitted holds, per node, the pods admitted and not yet finished.
	admitted map[string]map[types.UID]*v1.Pod
	// decided holds every pod admitted or rejected, until it is deleted.
	decided map[types.UID]bool
	// lost holds the nodes whose machine is gone: their kubelet admits,
	// runs and reports nothing any more.
	lost map[string]bool
	// rejected counts rejections by reason.
	rejected map[string]int

	// adopt selects the nodes this kubelet registers and heartbeats
	// (AdoptNodes); nil adopts none.
	adopt     func(*v1.Node) bool
	heartbeat time.Duration
	// adopted holds the adopted nodes not deleted, by name.
	adopted map[string]types.UID
}

// New returns a Kubelet; Start makes it watch.
func New(client kubernetes.Interface) *Kubelet {
	return &Kubelet{
		client:   client,
		writes:   retry.New(0),
		admitted: map[string]map[types.UID]*v1.Pod{},
		decided:  map[types.UID]bool{},
		lost:     map[string]bool{},
		rejected: map[string]int{},
		adopted:  map[string]types.UID{},
	}
}

// Start registers the kubelet's handlers on factory's pod and node informers
// and retries its failed writes until ctx ends; the caller starts the factory.
func (k *Kubelet) Start(ctx context.Context, factory informers.SharedInformerFactory) error {
	logger := klog.FromContext(ctx)
	k.nodes = factory.Core().V1().Nodes().Lister()
	k.pods = factory.Core().V1().Pods().Lister()
	go k.writes.Run(ctx)
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.onPod(ctx, logger, obj) },
		UpdateFunc: func(_, obj any) { k.onPod(ctx, logger, obj) },
		DeleteFunc: func(obj any) { k.onPodDelete(obj) },
	}); err != nil {
		return err
	}
	_, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if node, ok := obj.(*v1.Node); ok {
				k.onNodeUpsert(ctx, logger, node)
			}
			k.onNodeAdd(ctx, logger, obj)
		},
		UpdateFunc: func(_, obj any) {
			if node, ok := obj.(*v1.Node); ok {
				k.onNodeUpsert(ctx, logger, node)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if node, ok := obj.(*v1.Node); ok {
				k.onNodeGone(ctx, node)
			}
		},
	})
	k.mu.Lock()
	adopting, interval := k.adopt != nil, k.heartbeat
	k.mu.Unlock()
	if adopting {
		go k.runHeartbeats(ctx, interval)
	}
	return err
}

func (k *Kubelet) onPod(ctx context.Context, logger klog.Logger, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost[pod.Spec.NodeName] {
		return // no kubelet there any more
	}
	if pod.DeletionTimestamp != nil {
		// Graceful deletion: the containers are killed at once and the
		// kubelet confirms the deletion.
		k.forgetLocked(pod)
		k.writes.Do(ctx, "delete/"+string(pod.UID), func(ctx context.Context) error {
			zero := int64(0)
			err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
			})
			return moot(err)
		})
		return
	}
	if k.decided[pod.UID] || contract.IsTerminal(pod) {
		return
	}
	node, err := k.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		// Its node's informer event comes later: onNodeAdd admits it then.
		logger.V(4).Info("Pod bound to a node without a kubelet", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
		return
	}
	k.decided[pod.UID] = true
	r := Admit(node, pod, k.podsLocked(node.Name))
	var status v1.PodStatus
	if r.Admit {
		if k.admitted[node.Name] == nil {
			k.admitted[node.Name] = map[types.UID]*v1.Pod{}
		}
		k.admitted[node.Name][pod.UID] = pod
		status = RunningStatus(pod, time.Now())
		logger.V(4).Info("Admitted pod", "pod", klog.KObj(pod), "node", node.Name)
	} else {
		status = RejectedStatus(pod, r)
		k.rejected[r.Reason]++
		logger.V(2).Info("Rejected pod", "pod", klog.KObj(pod), "node", node.Name, "reason", r.Reason, "message", r.Message)
	}
	k.writeStatus(ctx, pod, status)
}

// onNodeAdd admits the pods bound to a node before its kubelet (the node's
// informer event) was seen.
func (k *Kubelet) onNodeAdd(ctx context.Context, logger klog.Logger, obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	pods, err := k.pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		if pod.Spec.NodeName == node.Name {
			k.onPod(ctx, logger, pod)
		}
	}
}

func (k *Kubelet) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*v1.Pod); ok {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.forgetLocked(pod)
		delete(k.decided, pod.UID)
	}
}

// NodeLost stops the kubelet of node, as when its machine goes away: the
// pods it ran hold nothing any more, and it admits, reports and ends nothing
// there from now on. Their API objects stay as they were until the pod
// garbage collector deletes them.
func (k *Kubelet) NodeLost(node string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lost[node] = true
	delete(k.admitted, node)
}

func (k *Kubelet) forgetLocked(pod *v1.Pod) {
	if m := k.admitted[pod.Spec.NodeName]; m != nil {
		delete(m, pod.UID)
	}
}

// Rejections returns how many pods were rejected at admission, by reason.
func (k *Kubelet) Rejections() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]int, len(k.rejected))
	for r, n := range k.rejected {
		out[r] = n
	}
	return out
}

// podsLocked returns the pods admitted on node, oldest first.
func (k *Kubelet) podsLocked(node string) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(k.admitted[node]))
	for _, p := range k.admitted[node] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) })
	return out
}

// Admitted returns the pods admitted on node and not finished.
func (k *Kubelet) Admitted(node string) []*v1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.podsLocked(node)
}

// Exit ends an admitted pod: its containers exited with exitCode. The pod
// stops holding resources and its status turns Succeeded (0) or Failed
// (written in the background if the apiserver does not take it at once).
func (k *Kubelet) Exit(ctx context.Context, pod *v1.Pod, exitCode int32) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.admitted[pod.Spec.NodeName]
	if _, ok := m[pod.UID]; !ok {
		return fmt.Errorf("pod %s is not running on node %q", klog.KObj(pod), pod.Spec.NodeName)
	}
	delete(m, pod.UID)
	k.writeStatus(ctx, pod, TerminatedStatus(pod, exitCode, time.Now()))
	return nil
}

// writeStatus replaces the pod's status through the status subresource,
// retrying until it goes through or the pod is gone (or was replaced by
// another of the same name).
func (k *Kubelet) writeStatus(ctx context.Context, pod *v1.Pod, status v1.PodStatus) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   status,
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Encoding pod status", "pod", klog.KObj(pod))
		return
	}
	k.writes.Do(ctx, "status/"+string(pod.UID), func(ctx context.Context) error {
		_, err := k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		return moot(err)
	})
}

// moot treats a write whose pod is gone, or was replaced by another pod of
// the same name (the UID precondition fails), as done.
func moot(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
