package workflowreservation

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// EventsToRegister returns the events that can make room for a pod this
// plugin rejected: a workflow pod claiming its reservation (it may need less
// than was held), an assigned pod going (which also releases a runner's
// reservation) or shrinking, the rejected pod itself asking for less or
// getting a new workflow size, a node appearing or growing, and DRA devices
// published or freed (dra.go).
func (pl *WorkflowReservation) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: exceptPairPods(pl.isSchedulableAfterPodAdded)},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: exceptPairPods(pl.isSchedulableAfterPodDeleted)},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update}, QueueingHintFn: exceptPairPods(pl.isSchedulableAfterPodUpdated)},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}, QueueingHintFn: exceptPairPods(pl.isSchedulableAfterNodeChange)},
	}
	events = append(events, pl.draEvents()...)
	if !pl.ownsFit() {
		return events, nil
	}
	// The in-tree Fit this plugin runs: its rejections are this plugin's,
	// and so must be its hints.
	fitEvents, err := pl.fit.EventsToRegister(ctx)
	for _, e := range fitEvents {
		if e.QueueingHintFn != nil {
			e.QueueingHintFn = exceptPairPods(e.QueueingHintFn)
		}
		events = append(events, e)
	}
	return events, err
}

// exceptPairPods never requeues a pair pod: no event makes it schedulable.
func exceptPairPods(fn fwk.QueueingHintFn) fwk.QueueingHintFn {
	return func(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
		if contract.IsPairPod(pod) {
			return fwk.QueueSkip, nil
		}
		return fn(logger, pod, oldObj, newObj)
	}
}

// isSchedulableAfterPodAdded queues the pod when a workflow pod lands on a
// node: it turns its runner's reservation into its own request, which
// frees whatever the reservation held beyond it.
func (pl *WorkflowReservation) isSchedulableAfterPodAdded(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	_, added, err := schedutil.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if _, ok := pl.pods.RunnerOf(added); !ok || added.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Workflow pod claimed a reservation, room may be free", "pod", klog.KObj(pod), "workflowPod", klog.KObj(added))
	return fwk.Queue, nil
}

// isSchedulableAfterPodDeleted queues the pod when a pod bound to a node goes:
// its requests, and its reservation if it was a runner, are freed.
func (pl *WorkflowReservation) isSchedulableAfterPodDeleted(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	deleted, _, err := schedutil.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if deleted.Spec.NodeName == "" && deleted.Status.NominatedNodeName == "" {
		logger.V(5).Info("Deleted pod was not assigned, no room freed", "pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Assigned pod deleted, room may be free", "pod", klog.KObj(pod), "deletedPod", klog.KObj(deleted))
	return fwk.Queue, nil
}

// isSchedulableAfterPodUpdated queues the pod when an assigned pod's requests
// shrink, or when the rejected pod itself asks for less or has its workflow
// size annotations changed (e.g. a malformed value fixed).
func (pl *WorkflowReservation) isSchedulableAfterPodUpdated(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	original, modified, err := schedutil.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if modified.UID == pod.UID {
		for _, k := range []string{contract.WorkflowRequestsAnnotation, contract.StepRequestsAnnotation, contract.HostPortsAnnotation} {
			if original.Annotations[k] != modified.Annotations[k] {
				logger.V(5).Info("Pod's workflow size changed", "pod", klog.KObj(pod), "annotation", k)
				return fwk.Queue, nil
			}
		}
	} else if modified.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	} else if original.Generation != 0 && original.Generation == modified.Generation && !statusResourcesChanged(original, modified) {
		// Most updates of assigned pods are status updates: the spec did
		// not change, nor the resources the kubelet reports (an in-place
		// resize lands there). Skip without computing requests.
		return fwk.QueueSkip, nil
	}
	if scaledDown(original, modified) {
		logger.V(5).Info("Pod scaled down, room may be free", "pod", klog.KObj(pod), "modifiedPod", klog.KObj(modified))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// scaledDown reports whether any resource request of the pod decreased.
func scaledDown(original, modified *v1.Pod) bool {
	before, after := reservations.PodAmount(original), reservations.PodAmount(modified)
	if after.MilliCPU < before.MilliCPU || after.Memory < before.Memory || after.EphemeralStorage < before.EphemeralStorage {
		return true
	}
	for n, v := range before.Scalar {
		if after.Scalar[n] < v {
			return true
		}
	}
	return false
}

// isSchedulableAfterNodeChange queues the pod for a new node, or a node
// whose allocatable grew in some resource.
func (pl *WorkflowReservation) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	original, modified, err := schedutil.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if original == nil {
		logger.V(5).Info("Node added", "pod", klog.KObj(pod), "node", klog.KObj(modified))
		return fwk.Queue, nil
	}
	for name, q := range modified.Status.Allocatable {
		before, ok := original.Status.Allocatable[name]
		if !ok || q.Cmp(before) > 0 {
			logger.V(5).Info("Node allocatable grew", "pod", klog.KObj(pod), "node", klog.KObj(modified), "resource", name)
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}

// statusResourcesChanged reports whether the resources the kubelet reports
// for the pod's containers changed: the scheduler counts the larger of spec
// and status while an in-place resize is under way.
func statusResourcesChanged(original, modified *v1.Pod) bool {
	a, b := original.Status.ContainerStatuses, modified.Status.ContainerStatuses
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if !equality.Semantic.DeepEqual(a[i].Resources, b[i].Resources) {
			return true
		}
	}
	return false
}
