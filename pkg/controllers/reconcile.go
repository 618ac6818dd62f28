package controllers

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// Reconcile compares the reservations with the cluster and repairs what
// drifted: a missed informer event, a handler that lost a race, a record
// that does not exist. Every replica runs it, once before its first
// scheduling cycle and then every reconcileInterval, so that a standby's
// store matches the leader's; each repair is a log line everywhere, and on
// the leader also an event on the runner and a count of
// scheduler_workflow_reservation_repairs_total.
func (f *Feeder) Reconcile(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("reconciler")
	finished := f.finishedWorkflowPods(ctx, logger)
	freed := false
	for _, r := range f.store.List() {
		freed = f.reconcileReservation(logger, r, finished) || freed
	}
	f.warnUnrecorded(logger)
	f.pairPods.Sweep()
	if f.placeholders != nil {
		f.placeholders.Sweep(f.store.List())
	}
	if freed {
		// No cluster event announces these releases.
		f.activateAllWaiting(logger)
	}
}

// finishedPods are the terminal workflow pods, by UID and by runner.
type finishedPods struct {
	byUID    map[types.UID]*v1.Pod
	byRunner map[types.NamespacedName][]*v1.Pod
}

// finishedWorkflowPods lists the terminal workflow pods of the runner
// namespaces (every namespace where a profile names none): the scheduler's
// informer does not hold them, and a reservation rebuilt after its workflow
// pod finished would otherwise hold room until its runner ends. Pods so
// labelled elsewhere cannot claim a runner's room and are not read: anyone
// may make them, as many as they like.
func (f *Feeder) finishedWorkflowPods(ctx context.Context, logger klog.Logger) finishedPods {
	out := finishedPods{byUID: map[types.UID]*v1.Pod{}, byRunner: map[types.NamespacedName][]*v1.Pod{}}
	for _, ns := range f.runnerNamespaces() {
		list, err := f.cluster.ClientSet().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
			LabelSelector:   f.runnerPodLabel,
			FieldSelector:   "status.phase!=" + string(v1.PodPending) + ",status.phase!=" + string(v1.PodRunning) + ",status.phase!=" + string(v1.PodUnknown),
			ResourceVersion: "0",
		})
		if err != nil {
			logger.Error(err, "Listing finished workflow pods", "namespace", ns)
			continue
		}
		for i := range list.Items {
			if p := &list.Items[i]; contract.IsTerminal(p) {
				out.byUID[p.UID] = p
				runner := types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[f.runnerPodLabel]}
				out.byRunner[runner] = append(out.byRunner[runner], p)
			}
		}
	}
	return out
}

// runnerNamespaces are the namespaces where the profiles have runners, or
// only metav1.NamespaceAll if one of them names none.
func (f *Feeder) runnerNamespaces() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	all := sets.New[string]()
	for _, p := range f.profiles {
		if p.Namespaces.Len() == 0 {
			return []string{metav1.NamespaceAll}
		}
		all = all.Union(p.Namespaces)
	}
	return sets.List(all)
}

// reconcileReservation repairs r; it reports whether it freed room.
func (f *Feeder) reconcileReservation(logger klog.Logger, r reservations.Reservation, finished finishedPods) bool {
	pod, err := f.pods.Pods(r.Runner.Namespace).Get(r.Runner.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Getting a runner", "runner", r.Runner)
		return false
	}
	switch {
	case pod == nil || pod.UID != r.RunnerUID || contract.IsTerminal(pod):
		if _, ok := f.store.Release(r.Runner, r.RunnerUID); ok {
			f.repaired(logger, stub(r), metrics.RepairRunnerGone, fmt.Sprintf("Released %s on node %s: the runner is gone", r.Size, r.Node))
			return true
		}
		return false
	case pod.DeletionTimestamp == nil && !f.ownership(pod).MayHoldRoom():
		// Rebuilt before ARC's EphemeralRunners were listed. (ARC deletes
		// a runner's pod before its EphemeralRunner; a pod being deleted
		// may outlive it.)
		if _, ok := f.store.Release(r.Runner, r.RunnerUID); ok {
			f.repaired(logger, pod, metrics.RepairNotARunner, fmt.Sprintf("Released %s on node %s: no EphemeralRunner of ARC controls the pod, so it is not a runner", r.Size, r.Node))
			return true
		}
		return false
	case pod.Spec.NodeName != "" && pod.Spec.NodeName != r.Node:
		nr, err := reservations.FromPod(pod)
		if err != nil || nr == nil {
			if _, ok := f.store.Release(r.Runner, r.RunnerUID); ok {
				f.repaired(logger, pod, metrics.RepairMoved, fmt.Sprintf("Released %s on node %s: the runner is bound to node %s and carries no valid record (%v)", r.Size, r.Node, pod.Spec.NodeName, err))
				return true
			}
			return false
		}
		f.store.Rebuild(nr)
		f.repaired(logger, pod, metrics.RepairMoved, fmt.Sprintf("Moved the reservation from node %s to node %s, where the runner is bound", r.Node, nr.Node))
		return true
	case pod.Spec.NodeName == r.Node:
		if _, err := f.nodes.Get(r.Node); apierrors.IsNotFound(err) {
			if _, ok := f.store.Release(r.Runner, r.RunnerUID); ok {
				f.release(r.RunnerUID)
				f.repaired(logger, pod, metrics.RepairNodeGone, fmt.Sprintf("Released %s: node %s is gone", r.Size, r.Node))
			}
			return false // the node's room is gone with it
		}
		if err := f.beyondNode(&r, pod); err != nil {
			if _, ok := f.store.Release(r.Runner, r.RunnerUID); ok {
				f.repaired(logger, pod, metrics.RepairInvalid, "Released: "+err.Error())
				return true
			}
			return false
		}
		if !r.Bound() {
			f.store.MarkBound(r.Runner, r.RunnerUID)
		}
	}
	if r.UsedUp() {
		return false
	}
	workflows := f.WorkflowPods(r.Runner)
	if r.ClaimedBy() != "" {
		for _, wf := range workflows {
			if wf.UID == r.ClaimedBy() && !contract.IsTerminal(wf) && finished.byUID[wf.UID] == nil {
				return false
			}
		}
		if f.markDone(r, r.ClaimedBy()) {
			f.repaired(logger, pod, metrics.RepairFinished, fmt.Sprintf("The workflow pod that claimed the reservation on node %s is gone; it holds nothing more", r.Node))
			return true
		}
		return false
	}
	for _, wf := range workflows {
		if wf.Spec.NodeName == r.Node && !contract.IsTerminal(wf) && finished.byUID[wf.UID] == nil && r.Owns(wf) {
			f.observeWorkflow(logger, wf, r.Runner)
			f.repaired(logger, pod, metrics.RepairClaimed, fmt.Sprintf("Workflow pod %s on node %s had not been counted as the reservation's claim", wf.Name, wf.Spec.NodeName))
			return true
		}
	}
	for _, wf := range finished.byRunner[r.Runner] {
		if r.Owns(wf) && wf.Spec.NodeName == r.Node {
			if f.markDone(r, wf.UID) {
				f.repaired(logger, pod, metrics.RepairFinished, fmt.Sprintf("Workflow pod %s already finished; the reservation on node %s holds nothing more", wf.Name, r.Node))
				return true
			}
			return false
		}
	}
	return false
}

// markDone marks r used up by workflow pod uid, if it is still the same
// reservation and not used up.
func (f *Feeder) markDone(r reservations.Reservation, uid types.UID) bool {
	changed := f.store.WorkflowPodFinished(r.Runner, r.RunnerUID, uid)
	if changed {
		f.recordMetrics()
	}
	return changed
}

// warnUnrecorded tells each runner of a tandem profile that is bound
// without a valid record, once, that it holds no room: tandem did not bind
// it (it was pinned with nodeName at creation, or bound by another
// scheduler or bind plugin), or its record was removed. Such a runner is
// never given a reservation: anyone who may create pods could create one,
// pinned to any node, and have tandem hold room for it that no quota sees
// (issue 20). tandem's own Bind writes the record in the Binding itself,
// so every runner tandem bound has one.
func (f *Feeder) warnUnrecorded(logger klog.Logger) {
	pods, err := f.pods.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing pods")
		return
	}
	for _, pod := range pods {
		if pod.Spec.NodeName == "" || contract.IsTerminal(pod) || pod.DeletionTimestamp != nil || !f.trusted(pod) {
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		if r, ok := f.store.Get(key); ok && r.RunnerUID == pod.UID {
			continue // held: rebuilt from its record, or taken by this replica
		}
		if f.wasReleased(pod.UID) {
			continue
		}
		if owner := f.ProfileOf(pod); owner.Sizer.Size(pod).Workflow.IsZero() {
			continue // tandem bound it without a reservation: no size was known (WorkflowSizeUnknown)
		}
		why := "carries no reservation record"
		if _, recorded := pod.Annotations[contract.ReservationAnnotation]; recorded {
			r, err := reservations.FromPod(pod)
			if err == nil && r != nil {
				continue // a valid record is the handlers' to rebuild
			}
			why = fmt.Sprintf("carries an invalid reservation record (%v)", err)
		}
		if !f.leader.IsLeader() || !f.firstWarning(pod.UID, contract.ReasonNotRecorded) {
			continue
		}
		logger.Info("Runner is bound without a valid reservation record; it holds no room", "runner", klog.KObj(pod), "node", pod.Spec.NodeName, "why", why)
		f.warn(pod, contract.ReasonNotRecorded, "Reconcile", fmt.Sprintf(
			"Bound to node %s but %s: tandem did not bind it (pinned with nodeName, bound by another scheduler or bind plugin) or the record was removed, so no room is held for its workflow pod", pod.Spec.NodeName, why))
	}
}

// repaired reports a repair on pod.
func (f *Feeder) repaired(logger klog.Logger, pod *v1.Pod, kind, message string) {
	logger.Info("Repaired a reservation", "runner", klog.KObj(pod), "repair", kind, "message", message)
	if f.leader.IsLeader() {
		metrics.Repairs.WithLabelValues(f.firstProfile().Name, kind).Inc()
	}
	f.warn(pod, contract.ReasonRepaired, "Reconcile", message)
}

// stub stands for a runner pod that is gone, as the object of an event.
func stub(r reservations.Reservation) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Runner.Namespace, Name: r.Runner.Name, UID: r.RunnerUID}}
}
