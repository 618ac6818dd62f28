package controllers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/controllers/pairpod"
	"github.com/tandem-scheduler/tandem/pkg/controllers/placeholder"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/sizing"
)

// workflowPodIndex indexes pods by "<namespace>/<runner>" of their
// runner-pod label: a runner's workflow pods without a scan of the cluster.
const workflowPodIndex = "tandem.dev/runner-pod"

// registerHandlers keeps the store in step with the cluster: it rebuilds
// reservations recorded on bound runner pods, notes claims by workflow pods,
// and releases reservations whose runner or node is gone. The returned
// function reports whether the handlers have seen every existing object.
func (f *Feeder) registerHandlers(logger klog.Logger) (func() bool, error) {
	informers := f.cluster.SharedInformerFactory()
	podInformer := informers.Core().V1().Pods().Informer()
	if err := podInformer.AddIndexers(cache.Indexers{workflowPodIndex: f.indexWorkflowPod, pairpod.Index: f.indexPairPod, placeholder.Index: f.indexPlaceholder}); err != nil {
		return nil, fmt.Errorf("indexing workflow pods: %w", err)
	}
	podReg, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			f.onPodAdd(logger, obj)
			f.OnPod(logger, obj)
		},
		UpdateFunc: func(_, obj any) { f.OnPod(logger, obj) },
		DeleteFunc: func(obj any) { f.OnPodDelete(logger, obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("registering pod handler: %w", err)
	}
	nodeReg, err := informers.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) { f.OnNodeDelete(logger, obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("registering node handler: %w", err)
	}
	return func() bool { return podReg.HasSynced() && nodeReg.HasSynced() }, nil
}

// mayBeOwn reports whether pod, labelled as one of tandem's pair pods or
// placeholders, is in a namespace where tandem makes them: one where a
// profile has runners (runnerNamespaces; every namespace where a profile
// names none). A pod so labelled elsewhere is someone else's, whatever it
// claims: tandem neither deletes it nor counts it (docs/security.md). In a
// runner namespace the chart's admission policy lets only tandem create or
// change pods with those labels.
func (f *Feeder) mayBeOwn(pod *v1.Pod) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, p := range f.profiles {
		if p.Namespaces.Len() == 0 || p.Namespaces.Has(pod.Namespace) {
			return true
		}
	}
	return false
}

// indexPairPod is pairpod.IndexFunc for the pods that may be tandem's.
func (f *Feeder) indexPairPod(obj any) ([]string, error) {
	if pod, ok := obj.(*v1.Pod); !ok || !contract.IsPairPod(pod) || !f.mayBeOwn(pod) {
		return nil, nil
	}
	return pairpod.IndexFunc(obj)
}

// indexPlaceholder is placeholder.IndexFunc for the pods that may be tandem's.
func (f *Feeder) indexPlaceholder(obj any) ([]string, error) {
	if pod, ok := obj.(*v1.Pod); !ok || !contract.IsPlaceholder(pod) || !f.mayBeOwn(pod) {
		return nil, nil
	}
	return placeholder.IndexFunc(obj)
}

func (f *Feeder) indexWorkflowPod(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, nil
	}
	if runner, ok := f.runnerOf(pod); ok {
		return []string{runner.String()}, nil
	}
	return nil, nil
}

// WorkflowPods returns the pods labelled as workflow pods of runner, in
// any phase the informer holds, in the order they claim
// (contract.ClaimOrder): the first of a runner incarnation's is its
// workflow pod, the later ones are container-step pods (hooks v0.8 label
// them too), whatever order the cache lists them in.
func (f *Feeder) WorkflowPods(runner types.NamespacedName) []*v1.Pod {
	out := f.labelledPods(runner)
	slices.SortFunc(out, contract.ClaimOrder)
	return out
}

// labelledPods returns the pods labelled as workflow pods of runner.
func (f *Feeder) labelledPods(runner types.NamespacedName) []*v1.Pod {
	if f.pods == nil {
		return nil
	}
	var out []*v1.Pod
	if f.cluster.SharedInformerFactory() != nil {
		objs, err := f.cluster.SharedInformerFactory().Core().V1().Pods().Informer().GetIndexer().ByIndex(workflowPodIndex, runner.String())
		if err == nil {
			for _, o := range objs {
				if p, ok := o.(*v1.Pod); ok {
					out = append(out, p)
				}
			}
			return out
		}
	}
	// Without the index (tests that give the feeder a lister of their own: UsePods).
	all, err := f.pods.Pods(runner.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	for _, p := range all {
		if r, ok := f.runnerOf(p); ok && r == runner {
			out = append(out, p)
		}
	}
	return out
}

// OnPod is the pod informer's add and update handler. It and the other
// handlers (OnPodDelete, OnNodeDelete; onEphemeralRunner) are exported for
// the plugin's tests, which hand them objects in an order of their choosing.
func (f *Feeder) OnPod(logger klog.Logger, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if contract.IsTerminal(pod) {
		// The scheduler's informer drops terminal pods (a delete); other
		// informers deliver them as updates.
		f.onPodGone(logger, pod, true)
		return
	}
	if contract.IsPlaceholder(pod) {
		if f.mayBeOwn(pod) {
			f.placeholders.Observed(pod)
		}
		return
	}
	if runner, ok := f.runnerOf(pod); ok {
		// A workflow pod exists: its runner's placeholder yields to it.
		f.checkPlaceholder(runner)
	}
	if pod.Spec.NodeName == "" {
		if f.mayBeOwn(pod) {
			f.pairPods.Observed(pod)
		}
		if f.firstProfile().IsRunner(pod) {
			f.setNominated(pod.UID, pod.Status.NominatedNodeName != "")
		}
		return
	}
	f.setNominated(pod.UID, false)
	f.waiting.Remove(pod.UID)
	if f.isRunner(pod) {
		f.pairPods.Check(pod) // bound: its pair pod goes
	}
	if _, ok := pod.Annotations[contract.ReservationAnnotation]; ok {
		f.observeRunner(logger, pod)
	}
	if f.trusted(pod) {
		f.placeholders.Check(pod.Namespace, pod.Name, pod.UID) // bound: its placeholder comes
	}
	if runner, ok := f.runnerOf(pod); ok {
		f.observeWorkflow(logger, pod, runner)
	}
}

// observeRunner rebuilds or confirms the reservation recorded on a bound
// runner. Only a runner of a tandem profile of this scheduler, whose record
// was taken for this very pod, holds room.
func (f *Feeder) observeRunner(logger klog.Logger, pod *v1.Pod) {
	if !f.trusted(pod) {
		logger.V(4).Info("Ignoring a recorded reservation on a pod that is not a runner of a tandem profile", "pod", klog.KObj(pod), "schedulerName", pod.Spec.SchedulerName)
		return
	}
	if f.wasReleased(pod.UID) {
		return
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if r, ok := f.store.Get(key); ok && r.RunnerUID == pod.UID {
		if r.Node == pod.Spec.NodeName {
			if !r.Bound() {
				f.store.MarkBound(key, pod.UID)
			}
			return // taken by this scheduler, or already rebuilt
		}
		logger.Info("Runner is bound to another node than its reservation; taking the node its record names", "runner", klog.KObj(pod), "node", pod.Spec.NodeName, "reservedNode", r.Node)
	}
	r, err := reservations.FromPod(pod)
	if err == nil {
		err = f.beyondNode(r, pod)
	}
	if err != nil {
		logger.Error(err, "Cannot rebuild the reservation of a runner", "pod", klog.KObj(pod))
		f.warn(pod, contract.ReasonInvalidReservation, "Rebuild", err.Error())
		return
	}
	f.store.Rebuild(r)
	f.recordMetrics()
	logger.V(2).Info("Rebuilt reservation from runner pod", "runner", klog.KObj(pod), "node", r.Node, "size", r.Size.String())
	// Informers deliver existing pods in any order: the workflow pod may
	// have been seen before its runner.
	f.claimOldest(logger, key)
}

// claimOldest offers runner's bound pods, oldest first, to its reservation:
// the first of them on its node that belongs to this runner incarnation
// claims it, its workflow pod (the later ones are container steps).
func (f *Feeder) claimOldest(logger klog.Logger, runner types.NamespacedName) {
	for _, wf := range f.WorkflowPods(runner) {
		if wf.Spec.NodeName != "" && !contract.IsTerminal(wf) {
			f.observeWorkflow(logger, wf, runner)
		}
	}
}

// claimListed claims each reservation that no pod claimed for the oldest of
// its runner's bound pods on its node (claimOldest), once the handlers have
// seen every pod the informer listed: until then they claim nothing
// (observeWorkflow).
func (f *Feeder) claimListed(logger klog.Logger) {
	for _, r := range f.store.List() {
		if r.ClaimedBy() == "" && !r.UsedUp() {
			f.claimOldest(logger, r.Runner)
		}
	}
}

// oldestClaimant returns the oldest of runner's bound pods on r's node that
// belong to r's runner incarnation and still run: the pod that claims r,
// whichever of them an informer delivered first. pod is one of them.
func (f *Feeder) oldestClaimant(runner types.NamespacedName, r reservations.Reservation, pod *v1.Pod) *v1.Pod {
	for _, wf := range f.WorkflowPods(runner) {
		if wf.UID == pod.UID {
			return pod
		}
		if wf.Spec.NodeName == r.Node && !contract.IsTerminal(wf) && r.Owns(wf) {
			return wf
		}
	}
	return pod
}

// observeWorkflow marks the runner's reservation claimed by a bound workflow
// pod of the same runner incarnation, whether the scheduler or the pod's own
// nodeName put it there.
func (f *Feeder) observeWorkflow(logger klog.Logger, pod *v1.Pod, runner types.NamespacedName) {
	// Most calls are status updates of a pod already counted: nothing to
	// change, and no write lock to take on the scheduling path's store.
	r, ok := f.store.Get(runner)
	if !ok || (r.ClaimedBy() == pod.UID && r.ClaimSeen()) || (r.ClaimedBy() != "" && r.ClaimedBy() != pod.UID) {
		return
	}
	if r.Owns(pod) && r.Node != pod.Spec.NodeName {
		// Every status update of such a pod comes here: no write lock.
		f.claimsNothingElsewhere(logger, pod, runner, r.Node)
		return
	}
	if r.ClaimedBy() == "" && r.Owns(pod) {
		// An informer delivers the pods it lists in any order, and a real
		// apiserver lists by name: a runner's container-step pods
		// (r1-step-…) before its workflow pod (r1-workflow). The oldest
		// claims; until the handlers have seen every listed pod it may be
		// one they have not seen yet, and claimListed claims then.
		if !f.synced() {
			return
		}
		pod = f.oldestClaimant(runner, r, pod)
	}
	taken, seen := f.store.SeeWorkflowPod(runner, pod)
	switch seen {
	case reservations.SeenStale:
		logger.V(4).Info("Workflow pod of an earlier runner of the same name; it claims nothing", "pod", klog.KObj(pod), "runner", runner)
		return
	case reservations.SeenElsewhere:
		f.claimsNothingElsewhere(logger, pod, runner, taken.Node)
		return
	case reservations.SeenClaim:
	default:
		return
	}
	f.observeClaim(f.firstProfile().Name, taken)
	f.recordMetrics()
	logger.V(2).Info("Workflow pod claimed its reservation", "pod", klog.KObj(pod), "runner", runner, "node", taken.Node)
	f.routineEvent(pod, contract.ReasonClaimed, "Claim", func() string {
		return fmt.Sprintf("Claimed the reservation of runner %s on node %s", runner.Name, taken.Node)
	})
	f.ActivateWaiting(logger)
}

// claimsNothingElsewhere tells a pod labelled as runner's workflow pod,
// bound to another node than runner's reservation, that it claims nothing.
// Whoever may create pods in the namespace may label one with another
// runner's name: only on the reserved node does it claim (and there it is
// in the node's accounting, so the room is not counted twice). Elsewhere it
// is an ordinary pod.
func (f *Feeder) claimsNothingElsewhere(logger klog.Logger, pod *v1.Pod, runner types.NamespacedName, reserved string) {
	if !f.leader.IsLeader() || !f.firstWarning(pod.UID, contract.ReasonNoReservation) {
		return // said once, by the leader
	}
	logger.V(2).Info("Pod labelled as a runner's workflow pod runs on another node than the runner's reservation; it claims nothing", "pod", klog.KObj(pod), "runner", runner, "node", pod.Spec.NodeName, "reservedNode", reserved)
	f.warn(pod, contract.ReasonNoReservation, "Claim", fmt.Sprintf(
		"Runs on node %s, not on node %s where runner %s's room is reserved: it claims nothing, and the room stays held for the runner's workflow pod", pod.Spec.NodeName, reserved, runner.Name))
}

// OnPodDelete is the pod informer's delete handler.
func (f *Feeder) OnPodDelete(logger klog.Logger, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*v1.Pod); ok {
		f.onPodGone(logger, pod, contract.IsTerminal(pod))
	}
}

// onPodGone releases a runner's reservation, or marks a claimed reservation
// used up when its workflow pod goes. finished says the pod ran to its end
// (terminal) rather than being deleted.
func (f *Feeder) onPodGone(logger klog.Logger, pod *v1.Pod, finished bool) {
	f.waiting.Remove(pod.UID)
	f.forget(pod.UID)
	if contract.IsPlaceholder(pod) {
		if f.mayBeOwn(pod) {
			f.placeholders.Gone(pod)
		}
		return
	}
	if f.isRunner(pod) {
		// Not Trusted: its EphemeralRunner may have gone first.
		f.pairPods.Check(pod) // gone: its pair pod goes
		f.placeholders.Check(pod.Namespace, pod.Name, pod.UID)
	}
	if runner, ok := f.runnerOf(pod); ok {
		f.checkPlaceholder(runner)
	}
	freed := false
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if r, ok := f.store.Release(key, pod.UID); ok {
		freed = true
		reason, how := metrics.ReleaseRunnerDeleted, "was deleted"
		if finished {
			reason, how = metrics.ReleaseRunnerFinished, "finished"
		}
		f.countRelease(reason, r.ClaimedBy() != "")
		logger.V(2).Info("Released reservation", "runner", klog.KObj(pod), "node", r.Node, "reason", reason)
		if r.ClaimedBy() == "" {
			f.routineEvent(pod, contract.ReasonReleased, "Release", func() string {
				return fmt.Sprintf("Released %s on node %s unclaimed: the runner %s", r.Size, r.Node, how)
			})
		}
	}
	if runner, ok := f.runnerOf(pod); ok {
		if f.store.WorkflowPodGone(runner, pod.UID) {
			freed = true
		}
	}
	if freed {
		f.recordMetrics()
		f.ActivateWaiting(logger)
	}
}

// checkPlaceholder has the placeholder worker look at the runner's
// placeholder, if the runner holds a reservation.
func (f *Feeder) checkPlaceholder(runner types.NamespacedName) {
	if f.placeholders == nil {
		return
	}
	if r, ok := f.store.Get(runner); ok {
		f.placeholders.Check(runner.Namespace, runner.Name, r.RunnerUID)
	}
}

// OnNodeDelete is the node informer's delete handler: the reservations on
// the node go with it.
func (f *Feeder) OnNodeDelete(logger klog.Logger, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	gone := f.store.ReleaseNode(node.Name)
	for _, r := range gone {
		f.release(r.RunnerUID)
		f.countRelease(metrics.ReleaseNodeDeleted, r.ClaimedBy() != "")
		logger.V(2).Info("Released reservation", "runner", r.Runner, "node", r.Node, "reason", metrics.ReleaseNodeDeleted)
		f.event(stub(*r), v1.EventTypeNormal, contract.ReasonReleased, "Release", fmt.Sprintf("Released %s: node %s was deleted", r.Size, r.Node))
	}
	if len(gone) > 0 {
		f.recordMetrics()
	}
}

// onConfigMap retries the runners waiting for a hook template in this
// ConfigMap: the scheduler has no event for ConfigMaps, and would otherwise
// retry them only at its periodic flush.
func (f *Feeder) onConfigMap(logger klog.Logger, obj any) {
	cm, ok := obj.(*v1.ConfigMap)
	if !ok {
		return
	}
	pods := f.waiting.Matching(func(pod *v1.Pod, _ time.Time) bool {
		ref, err := sizing.FindHookTemplate(pod)
		return err == nil && ref != nil && pod.Namespace == cm.Namespace && ref.ConfigMap == cm.Name
	})
	if len(pods) > 0 {
		logger.V(4).Info("Hook template changed, activating its waiting runners", "configMap", klog.KObj(cm), "count", len(pods))
		f.cluster.Activate(logger, pods)
	}
}

// countRelease counts a release if this replica leads.
func (f *Feeder) countRelease(reason string, claimed bool) {
	if f.leader.IsLeader() {
		metrics.Releases.WithLabelValues(f.firstProfile().Name, reason, strconv.FormatBool(claimed)).Inc()
	}
}

// beyondNode returns an error if r is beyond its profile's
// maxWorkflowRequests, or r and its runner could never fit on r's node,
// even empty: no reservation tandem takes is that large, so the record (or
// the runner's sizing) is not to be trusted with the node. A node not in
// the cache yet is checked by the reconciler later.
func (f *Feeder) beyondNode(r *reservations.Reservation, runner *v1.Pod) error {
	if owner := f.ProfileOf(runner); owner != nil && owner.Sizer != nil {
		// A record is anyone's to write who may update the runner.
		if err := owner.Sizer.BeyondMaximum(r.Size); err != nil {
			return fmt.Errorf("recorded reservation %w", err)
		}
	}
	if f.nodes == nil {
		return nil
	}
	node, err := f.nodes.Get(r.Node)
	if err != nil {
		return nil //nolint:nilerr // not in the cache yet: the reconciler checks again
	}
	need := r.Size.Add(reservations.PodAmount(runner))
	alloc := contract.AmountFromList(node.Status.Allocatable)
	over := func(want, have int64, listed bool) bool { return listed && want > have }
	_, hasCPU := node.Status.Allocatable[v1.ResourceCPU]
	_, hasMemory := node.Status.Allocatable[v1.ResourceMemory]
	_, hasStorage := node.Status.Allocatable[v1.ResourceEphemeralStorage]
	if over(need.MilliCPU, alloc.MilliCPU, hasCPU) || over(need.Memory, alloc.Memory, hasMemory) || over(need.EphemeralStorage, alloc.EphemeralStorage, hasStorage) {
		return fmt.Errorf("reservation %s with runner %s exceeds what node %s can hold at all (%s)", r.Size, klog.KObj(runner), r.Node, contract.FormatResources(node.Status.Allocatable))
	}
	for name, v := range need.Scalar {
		if alloc.Scalar[name] == 0 && f.mayBeDRABacked(name) {
			// DRA devices, which the node's allocatable does not list (or
			// lists at 0, as a removed device plugin's): the plugin counts
			// them, maxWorkflowRequests bounds what a record may hold.
			continue
		}
		if v > alloc.Scalar[name] {
			return fmt.Errorf("reservation %s with runner %s asks for more %s than node %s has", r.Size, klog.KObj(runner), name, r.Node)
		}
	}
	return nil
}

// mayBeDRABacked reports whether name may be an extended resource that a
// DeviceClass maps to DRA devices (KEP-5004: its spec.extendedResourceName,
// or the name every class has, deviceclass.resource.kubernetes.io/<class>),
// with DRAExtendedResource on. Until the DeviceClasses are listed it cannot
// tell, and says it may: the reconciler asks again, as for a node not yet
// in the cache.
func (f *Feeder) mayBeDRABacked(name v1.ResourceName) bool {
	if f.deviceClasses == nil {
		return false
	}
	if !f.deviceClassesSynced() {
		return true
	}
	if class, ok := strings.CutPrefix(string(name), resourceapi.ResourceDeviceClassPrefix); ok {
		_, err := f.deviceClasses.Get(class)
		return err == nil
	}
	classes, err := f.deviceClasses.List(labels.Everything())
	if err != nil {
		return false
	}
	for _, c := range classes {
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName == string(name) {
			return true
		}
	}
	return false
}
