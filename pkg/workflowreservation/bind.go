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

	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
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
// the bind extension point too); otherwise PostBind warns that the
// reservation is not recorded.
func (pl *WorkflowReservation) Bind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := getPreFilterState(cs)
	if err != nil || s.kind != kindRunner {
		return fwk.NewStatus(fwk.Skip)
	}
	r, ok := pl.store.Get(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if !ok || r.RunnerUID != pod.UID || r.Node != nodeName {
		return fwk.AsStatus(fmt.Errorf("reservation of runner %s on node %s is gone", klog.KObj(pod), nodeName))
	}
	value, err := reservations.Encode(&r)
	if err != nil {
		return fwk.AsStatus(err)
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{contract.ReservationAnnotation: value}},
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

// warnIfBoundElsewhere is PostBind's check for a profile in which another
// bind plugin bound the runner: its reservation is held in memory but not
// recorded on the pod, so a restart or a leader change loses it. The runner
// is told (a Warning event) and the log says how to fix the profile; the
// reconciler recovers such reservations from the runners' sizing sources.
func (pl *WorkflowReservation) warnIfBoundElsewhere(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) {
	if _, err := cs.Read(boundStateKey); err == nil {
		return
	}
	logger := klog.FromContext(ctx)
	warnBinderOrder.Do(func() {
		logger.Error(nil, "Another bind plugin bound a runner before WorkflowReservation: reservations are not recorded on runner pods and a restart or leader change loses them until the reconciler recovers them; enable WorkflowReservation at the bind extension point, ahead of DefaultBinder", "runner", klog.KObj(pod))
	})
	pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, contract.ReasonNotRecorded, "Bind",
		"Bound by another bind plugin: the reservation on node %s is not recorded on the pod (enable WorkflowReservation at the bind extension point)", nodeName)
}

var warnBinderOrder sync.Once
