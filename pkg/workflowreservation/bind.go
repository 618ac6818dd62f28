package workflowreservation

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.BindPlugin = &WorkflowReservation{}

// boundStateKey marks, in a runner's CycleState, that Bind recorded its
// reservation.
const boundStateKey = "Bind" + Name

type boundState struct{}

func (boundState) Clone() fwk.StateData { return boundState{} }

// Bind binds a runner and records its reservation in the same request: the
// apiserver copies a Binding's annotations onto the pod, so a runner is never
// bound without its reservation, nor recorded without being bound, and it
// costs no API call beyond the binding. Other pods are left to DefaultBinder.
// The profile must run this Bind before DefaultBinder (enable the plugin at
// the bind extension point too); otherwise PostBind records the reservation
// with a patch after the bind.
func (pl *WorkflowReservation) Bind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := getPreFilterState(cs)
	if err != nil || s.kind != kindRunner {
		return fwk.NewStatus(fwk.Skip)
	}
	r, ok := pl.store.get(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if !ok || r.runnerUID != pod.UID || r.node != nodeName {
		return fwk.AsStatus(fmt.Errorf("reservation of runner %s on node %s is gone", klog.KObj(pod), nodeName))
	}
	value, err := encodeReservation(&r)
	if err != nil {
		return fwk.AsStatus(err)
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{ReservationAnnotation: value}},
		Target: v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if cacher := pl.handle.APICacher(); cacher != nil {
		onFinish, err := cacher.BindPod(binding)
		if err == nil {
			err = cacher.WaitOnFinish(ctx, onFinish)
		}
		if err != nil {
			return fwk.AsStatus(err)
		}
	} else if err := pl.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(err)
	}
	cs.Write(boundStateKey, boundState{})
	return nil
}

// recordAfterBind is PostBind's fallback for a profile in which another
// binder bound the runner: it patches the reservation onto the pod.
func (pl *WorkflowReservation) recordAfterBind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) {
	if _, err := cs.Read(boundStateKey); err == nil {
		return
	}
	logger := klog.FromContext(ctx)
	warnBinderOrder.Do(func() {
		logger.Info("Another bind plugin ran before WorkflowReservation: reservations are recorded by a separate patch after the bind, which costs an API call and leaves a short window in which a restart loses them; enable WorkflowReservation at the bind extension point")
	})
	r, ok := pl.store.get(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if !ok || r.runnerUID != pod.UID || r.node != nodeName {
		return
	}
	patch, err := reservationPatch(&r)
	if err == nil {
		_, err = pl.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		logger.Error(err, "Recording the reservation on a runner", "runner", klog.KObj(pod), "node", nodeName)
	}
}

var warnBinderOrder sync.Once
