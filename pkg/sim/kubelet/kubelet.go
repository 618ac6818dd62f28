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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Kubelet plays the kubelet of every Node: it admits or rejects each pod
// bound to a node the moment it sees it, in the order it sees them, against
// the pods it admitted before (not the scheduler's view), reports admitted
// pods Running and ends them when told their containers exited.
type Kubelet struct {
	client kubernetes.Interface
	nodes  corelisters.NodeLister

	mu sync.Mutex
	// admitted holds, per node, the pods admitted and not yet finished.
	admitted map[string]map[types.UID]*v1.Pod
	// decided holds every pod admitted or rejected, until it is deleted.
	decided map[types.UID]bool
}

// New returns a Kubelet; Start makes it watch.
func New(client kubernetes.Interface) *Kubelet {
	return &Kubelet{
		client:   client,
		admitted: map[string]map[types.UID]*v1.Pod{},
		decided:  map[types.UID]bool{},
	}
}

// Start registers the kubelet's handlers on factory's pod and node informers;
// the caller starts the factory.
func (k *Kubelet) Start(ctx context.Context, factory informers.SharedInformerFactory) error {
	logger := klog.FromContext(ctx)
	k.nodes = factory.Core().V1().Nodes().Lister()
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.onPod(ctx, logger, obj) },
		UpdateFunc: func(_, obj any) { k.onPod(ctx, logger, obj) },
		DeleteFunc: func(obj any) { k.onPodDelete(obj) },
	})
	return err
}

func (k *Kubelet) onPod(ctx context.Context, logger klog.Logger, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		// Graceful deletion: the containers are killed at once and the
		// kubelet confirms the deletion.
		k.forgetLocked(pod)
		zero := int64(0)
		err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			logger.Error(err, "Confirming pod deletion", "pod", klog.KObj(pod))
		}
		return
	}
	if k.decided[pod.UID] || IsTerminal(pod) {
		return
	}
	node, err := k.nodes.Get(pod.Spec.NodeName)
	if err != nil {
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
		logger.V(2).Info("Rejected pod", "pod", klog.KObj(pod), "node", node.Name, "reason", r.Reason, "message", r.Message)
	}
	if err := k.patchStatus(ctx, pod, status); err != nil {
		logger.Error(err, "Writing pod status", "pod", klog.KObj(pod))
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

func (k *Kubelet) forgetLocked(pod *v1.Pod) {
	if m := k.admitted[pod.Spec.NodeName]; m != nil {
		delete(m, pod.UID)
	}
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
// stops holding resources and its status turns Succeeded (0) or Failed.
func (k *Kubelet) Exit(ctx context.Context, pod *v1.Pod, exitCode int32) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.admitted[pod.Spec.NodeName]
	if _, ok := m[pod.UID]; !ok {
		return fmt.Errorf("pod %s is not running on node %q", klog.KObj(pod), pod.Spec.NodeName)
	}
	delete(m, pod.UID)
	return k.patchStatus(ctx, pod, TerminatedStatus(pod, exitCode, time.Now()))
}

// patchStatus replaces the pod's status through the status subresource.
func (k *Kubelet) patchStatus(ctx context.Context, pod *v1.Pod, status v1.PodStatus) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   status,
	})
	if err != nil {
		return err
	}
	_, err = k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	return err
}
