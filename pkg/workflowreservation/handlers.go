package workflowreservation

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/pkg/workflowreservation/metrics"
)

// registerHandlers keeps the store in step with the cluster: it rebuilds
// reservations recorded on bound runner pods, notes claims by workflow pods,
// and releases reservations whose runner or node is gone. The returned
// function reports whether the handlers have seen every existing object.
func (pl *WorkflowReservation) registerHandlers(logger klog.Logger) (func() bool, error) {
	informers := pl.handle.SharedInformerFactory()
	podReg, err := informers.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pl.onPod(logger, obj) },
		UpdateFunc: func(_, obj any) { pl.onPod(logger, obj) },
		DeleteFunc: func(obj any) { pl.onPodDelete(logger, obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("registering pod handler: %w", err)
	}
	nodeReg, err := informers.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) { pl.onNodeDelete(logger, obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("registering node handler: %w", err)
	}
	pl.pods = informers.Core().V1().Pods().Lister()
	if _, err := informers.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pl.onConfigMap(logger, obj) },
		UpdateFunc: func(_, obj any) { pl.onConfigMap(logger, obj) },
	}); err != nil {
		return nil, fmt.Errorf("registering configmap handler: %w", err)
	}
	return func() bool { return podReg.HasSynced() && nodeReg.HasSynced() }, nil
}

func isTerminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

func (pl *WorkflowReservation) onPod(logger klog.Logger, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if isTerminal(pod) {
		pl.onPodGone(logger, pod, "finished")
		return
	}
	if pod.Spec.NodeName == "" {
		return
	}
	pl.waiting.remove(pod.UID)
	if _, ok := pod.Annotations[ReservationAnnotation]; ok {
		pl.observeRunner(logger, pod)
	}
	if runner, ok := pl.runnerOf(pod); ok {
		pl.observeWorkflow(logger, pod, runner)
	}
}

// observeRunner rebuilds or confirms the reservation recorded on a bound runner.
func (pl *WorkflowReservation) observeRunner(logger klog.Logger, pod *v1.Pod) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if r, ok := pl.store.get(key); ok && r.runnerUID == pod.UID {
		return // taken by this scheduler, or already rebuilt
	}
	r, err := reservationFromPod(pod)
	if err != nil {
		logger.Error(err, "Cannot rebuild the reservation of a runner", "pod", klog.KObj(pod))
		pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, ReasonInvalidReservation, "Rebuild", truncate(err.Error()))
		return
	}
	pl.store.put(r)
	pl.recordMetrics()
	logger.V(2).Info("Rebuilt reservation from runner pod", "runner", klog.KObj(pod), "node", r.node, "size", r.size.String())
	// Informers deliver existing pods in any order: the workflow pod may
	// have been seen before its runner.
	workflows, err := pl.pods.Pods(pod.Namespace).List(labels.SelectorFromSet(labels.Set{pl.runnerPodLabel: pod.Name}))
	if err != nil {
		logger.Error(err, "Listing workflow pods of a runner", "runner", klog.KObj(pod))
		return
	}
	for _, wf := range workflows {
		if wf.Spec.NodeName != "" && !isTerminal(wf) {
			pl.observeWorkflow(logger, wf, key)
		}
	}
}

// observeWorkflow marks the runner's reservation claimed by a bound workflow
// pod, whether the scheduler or the pod's own nodeName put it there.
func (pl *WorkflowReservation) observeWorkflow(logger klog.Logger, pod *v1.Pod, runner types.NamespacedName) {
	var claimed, elsewhere bool
	var taken reservation
	pl.store.update(runner, func(r *reservation) {
		if r.claimedBy != "" {
			return
		}
		// A workflow pod on another node (not pinned to its runner's)
		// no longer needs the room: the reservation is used up.
		elsewhere = r.node != pod.Spec.NodeName
		r.claimedBy, r.done = pod.UID, elsewhere
		claimed, taken = true, *r
	})
	if !claimed {
		return
	}
	pl.observeClaim(taken)
	pl.recordMetrics()
	if elsewhere {
		logger.V(2).Info("Workflow pod runs on another node than its runner's reservation; released it", "pod", klog.KObj(pod), "runner", runner, "node", pod.Spec.NodeName, "reservedNode", taken.node)
	} else {
		logger.V(2).Info("Workflow pod claimed its reservation", "pod", klog.KObj(pod), "runner", runner, "node", taken.node)
		pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeNormal, ReasonClaimed, "Claim",
			"Claimed the reservation of runner %s on node %s", runner.Name, taken.node)
	}
	pl.activateWaiting(logger)
}

func (pl *WorkflowReservation) onPodDelete(logger klog.Logger, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*v1.Pod); ok {
		pl.onPodGone(logger, pod, "deleted")
	}
}

// onPodGone releases a runner's reservation, or marks a claimed reservation
// used up when its workflow pod goes.
func (pl *WorkflowReservation) onPodGone(logger klog.Logger, pod *v1.Pod, how string) {
	pl.waiting.remove(pod.UID)
	freed := false
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if r := pl.store.remove(key, pod.UID); r != nil {
		freed = true
		reason := metrics.ReleaseRunnerDeleted
		if how == "finished" {
			reason = metrics.ReleaseRunnerFinished
		}
		metrics.Releases.WithLabelValues(pl.profile, reason, strconv.FormatBool(r.claimedBy != "")).Inc()
		logger.V(2).Info("Released reservation", "runner", klog.KObj(pod), "node", r.node, "reason", "runner "+how)
		if r.claimedBy == "" {
			pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeNormal, ReasonReleased, "Release",
				"Released %s on node %s unclaimed: the runner %s", r.size, r.node, how)
		}
	}
	if runner, ok := pl.runnerOf(pod); ok {
		pl.store.update(runner, func(r *reservation) {
			if r.claimedBy == pod.UID && !r.done {
				r.done, freed = true, true
			}
		})
	}
	if freed {
		pl.recordMetrics()
		pl.activateWaiting(logger)
	}
}

func (pl *WorkflowReservation) onNodeDelete(logger klog.Logger, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	for _, r := range pl.store.removeNode(node.Name) {
		metrics.Releases.WithLabelValues(pl.profile, metrics.ReleaseNodeDeleted, strconv.FormatBool(r.claimedBy != "")).Inc()
		logger.V(2).Info("Released reservation", "runner", r.runner, "node", r.node, "reason", "node deleted")
	}
	pl.recordMetrics()
}

// onConfigMap retries the runners waiting for a hook template in this
// ConfigMap: the scheduler has no event for ConfigMaps, and would otherwise
// retry them only at its periodic flush.
func (pl *WorkflowReservation) onConfigMap(logger klog.Logger, obj any) {
	cm, ok := obj.(*v1.ConfigMap)
	if !ok {
		return
	}
	pods := pl.waiting.matching(func(pod *v1.Pod) bool {
		ref, err := findHookTemplate(pod)
		return err == nil && ref != nil && pod.Namespace == cm.Namespace && ref.configMap == cm.Name
	})
	if len(pods) > 0 {
		logger.V(4).Info("Hook template changed, activating its waiting runners", "configMap", klog.KObj(cm), "count", len(pods))
		pl.handle.Activate(logger, pods)
	}
}
