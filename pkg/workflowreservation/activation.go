package workflowreservation

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// activateWaiting requeues the pods turned away within controllers.RecentRejection, now
// or when their backoff ends.
func (pl *WorkflowReservation) activateWaiting(logger klog.Logger) {
	since := pl.sh.waiting.Now().Add(-controllers.RecentRejection)
	pods, wait := pl.sh.waiting.FreedRoom(func(_ *v1.Pod, rejected time.Time) bool { return rejected.After(since) })
	pl.activate(logger, pods)
	pl.activateDue(logger, wait)
}

// activateAllWaiting requeues every pod turned away, now or when its
// backoff ends.
func (pl *WorkflowReservation) activateAllWaiting(logger klog.Logger) {
	pods, wait := pl.sh.waiting.FreedRoom(func(*v1.Pod, time.Time) bool { return true })
	pl.activate(logger, pods)
	pl.activateDue(logger, wait)
}

// activateDue activates, after wait (none if 0), the pods then due.
func (pl *WorkflowReservation) activateDue(logger klog.Logger, wait time.Duration) {
	if wait <= 0 {
		return
	}
	pl.sh.waiting.Clock.AfterFunc(wait, func() {
		// Not on the clock's goroutine: a fake clock runs this holding
		// its lock, which due's reading of the time takes.
		go func() {
			pods, wait := pl.sh.waiting.Due()
			pl.activate(logger, pods)
			pl.activateDue(logger, wait)
		}()
	})
}

func (pl *WorkflowReservation) activate(logger klog.Logger, pods map[string]*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	logger.V(4).Info("Reserved room freed, activating waiting pods", "count", len(pods))
	pl.handle.Activate(logger, pods)
}

// wantPlaceholder is the placeholder the runner incarnation should have, and
// the runner pod: one while its profile holds reservations with pods, the
// runner is bound and its reservation waits for a workflow pod.
func (pl *WorkflowReservation) wantPlaceholder(key controllers.RunnerKey) (*v1.Pod, *v1.Pod) {
	runner, err := pl.pods.Pods(key.Namespace).Get(key.Name)
	if err != nil || runner.UID != key.UID {
		return nil, nil
	}
	if runner.Spec.NodeName == "" || runner.DeletionTimestamp != nil || controllers.IsTerminal(runner) {
		return runner, nil
	}
	owner := pl.sh.profileOf(runner)
	if owner == nil || owner.reservationMode != config.ReservationModePods {
		return runner, nil
	}
	nn := types.NamespacedName{Namespace: key.Namespace, Name: key.Name}
	r, ok := pl.store.Get(nn)
	if !ok || r.RunnerUID != key.UID || r.UsedUp() || r.ClaimedBy() != "" || r.Node != runner.Spec.NodeName {
		return runner, nil
	}
	for _, wf := range pl.workflowPods(nn) {
		if !r.Owns(wf) || controllers.IsTerminal(wf) {
			continue
		}
		if wf.Spec.NodeName == "" {
			if p := pl.sh.profileOf(wf); p != nil && p.handover() {
				continue // it takes the placeholder's room at Permit
			}
		}
		return runner, nil // it takes the room: the placeholder yields
	}
	hold, _ := r.Holds(reservations.RunnerPods{})
	hold.Pods = 0
	if hold.IsZero() {
		return runner, nil
	}
	return runner, controllers.PlaceholderFor(runner, r.Node, hold, owner.placeholderImage)
}
