package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// Status updates of a counted workflow pod change nothing: they neither
// take the store's write lock nor invalidate the node's cached held room.
func TestNoOpUpdatesKeepNodeVersion(t *testing.T) {
	logger := klogger(t)
	f, _ := newTestFeeder(t)
	useListerOf(t, f)
	f.store.Take(oneUnitReservation("r1"))
	wf := workflowPod("r1").Node("n1").Obj()
	f.OnPod(logger, wf)
	v := f.store.NodeVersion("n1")
	for range 5 {
		f.OnPod(logger, wf)
	}
	if got := f.store.NodeVersion("n1"); got != v {
		t.Errorf("5 no-op updates moved the node's version from %d to %d", v, got)
	}
}

// Defect 7: a reservation released because its node was deleted must not
// come back with the next update of the runner still bound to that node.
func TestNodeDeletionReleaseSticks(t *testing.T) {
	ctx := context.Background()
	logger, _ := ktesting.NewTestContext(t)
	runner := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	node := st.MakeNode().Name("n1").Obj()
	f, c := newTestFeeder(t, withObjects(runner, node))
	if err := c.client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted node's reservation is released", func() bool { return f.store.Empty() })
	updated := runner.DeepCopy()
	updated.Labels["touched"] = "yes"
	f.OnPod(logger, updated)
	if !f.store.Empty() {
		t.Errorf("reservation back after the runner's update: %+v", f.store.List())
	}
}

func TestRebuildFromRunnerPods(t *testing.T) {
	bound := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	garbage := runnerPod("r2").Node("n1").Annotation(contract.ReservationAnnotation, "{").Obj()
	pending := runnerPod("r3").Annotation(contract.ReservationAnnotation, recordedFor("r3")).Obj()
	f, c := newTestFeeder(t, withObjects(bound, garbage, pending))

	if !f.Synced() {
		t.Fatal("handlers not synced after the informers synced")
	}
	got := f.store.List()
	if len(got) != 1 || got[0].Runner != key("r1") || got[0].Node != "n1" || got[0].Size.MilliCPU != 1000 {
		t.Fatalf("rebuilt reservations = %+v, want only r1's cpu=1 on n1", got)
	}
	var warned bool
	for _, e := range c.events() {
		warned = warned || (strings.Contains(e, contract.ReasonInvalidReservation) && strings.Contains(e, "Warning"))
	}
	if !warned {
		t.Error("no Warning event for the unreadable reservation of r2")
	}
}

// Defect 1, after a restart: the rebuilt reservation of the new runner is
// not claimed by the failed incarnation's workflow pod either.
func TestRebuildIgnoresStaleWorkflowPod(t *testing.T) {
	runner := runnerPod("r1").UID("r1-new").CreationTimestamp(later).Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1-new")).Obj()
	stale := workflowPod("r1").UID("stale").CreationTimestamp(earlier).Node("n1").Obj()
	f, _ := newTestFeeder(t, withObjects(runner, stale))
	r, ok := f.store.Get(key("r1"))
	if !ok {
		t.Fatal("reservation not rebuilt")
	}
	if r.ClaimedBy() != "" {
		t.Errorf("the rebuilt reservation is claimed by the stale workflow pod %q", r.ClaimedBy())
	}
}

func TestRebuildSeesWorkflowPodFirst(t *testing.T) {
	// The informer may deliver the workflow pod before its runner; the
	// rebuilt reservation must still be claimed.
	wf := workflowPod("r1").Node("n1").Obj()
	runner := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	for name, objs := range map[string][]runtime.Object{"workflow first": {wf, runner}, "runner first": {runner, wf}} {
		t.Run(name, func(t *testing.T) {
			f, _ := newTestFeeder(t, withObjects(objs...))
			eventually(t, "the rebuilt reservation is claimed", func() bool {
				r, ok := f.store.Get(key("r1"))
				return ok && r.ClaimedBy() == wf.UID
			})
		})
	}
}

// Defect 7: informers deliver existing pods in any order; with the workflow
// pod first, the rebuilt reservation is still claimed.
func TestRebuildWorkflowPodFirst(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	wf := workflowPod("r1").Node("n1").Obj()
	runner := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	f, _ := newTestFeeder(t)
	useListerOf(t, f, wf, runner)
	f.OnPod(logger, wf)
	f.OnPod(logger, runner)
	if r, ok := f.store.Get(key("r1")); !ok || r.ClaimedBy() != wf.UID {
		t.Errorf("reservation %+v (found %v), want it claimed by %s", r, ok, wf.UID)
	}
}

// Found by TestHoldRuleTable failing once under load: an informer delivers
// the pods it lists in any order, and a real apiserver lists by name, a
// runner's container-step pods (r1-step-…) before its workflow pod
// (r1-workflow). A runner rebuilt before its workflow pod was seen let a
// step pod claim the reservation, and the workflow pod then counted as a
// step pod: the step headroom it leaves was no longer held, and once the
// step pod ended the reservation was used up. The handlers claim nothing
// until they have seen every listed pod, and then the oldest claims.
func TestStepPodSeenBeforeItsWorkflowPodClaimsNothing(t *testing.T) {
	logger := klogger(t)
	created := func(sec int64) metav1.Time { return metav1.Unix(sec, 0) }
	runner := runnerPod("r1").Node("n1").CreationTimestamp(created(10)).Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	wf := workflowPod("r1").Node("n1").CreationTimestamp(created(20)).Obj()
	step := st.MakePod().Namespace(runner.Namespace).Name("r1-step-0a1b").UID("r1-step-0a1b").Label("runner-pod", "r1").
		Node("n1").CreationTimestamp(created(30)).Obj()
	claimed := func(f *Feeder) types.UID {
		r, ok := f.store.Get(key("r1"))
		if !ok {
			t.Fatal("the runner's reservation was not rebuilt")
		}
		return r.ClaimedBy()
	}

	t.Run("while the informer's list is handed over", func(t *testing.T) {
		f, _ := newTestFeeder(t)
		var synced atomic.Bool
		f.synced = synced.Load // the handlers have not seen every listed pod
		useListerOf(t, f, runner, step)
		f.OnPod(logger, runner)
		f.OnPod(logger, step)
		useListerOf(t, f, runner, step, wf)
		f.OnPod(logger, wf)
		if got := claimed(f); got != "" {
			t.Errorf("claimed by %q before every listed pod was seen, want no claim yet", got)
		}
		synced.Store(true)
		f.claimListed(logger)
		if got := claimed(f); got != wf.UID {
			t.Errorf("claimed by %q, want the workflow pod %q", got, wf.UID)
		}
	})
	t.Run("created in the workflow pod's second", func(t *testing.T) {
		// Creation times have whole seconds; by name the step pod sorts first.
		wf, step := wf.DeepCopy(), step.DeepCopy()
		step.CreationTimestamp = wf.CreationTimestamp
		f, _ := newTestFeeder(t)
		useListerOf(t, f, runner, step, wf)
		f.OnPod(logger, runner)
		if got := claimed(f); got != wf.UID {
			t.Errorf("claimed by %q, want the workflow pod %q", got, wf.UID)
		}
	})
	t.Run("a step pod's event first, once every pod was seen", func(t *testing.T) {
		f, _ := newTestFeeder(t)
		useListerOf(t, f, runner)
		f.OnPod(logger, runner)
		useListerOf(t, f, runner, step, wf)
		f.OnPod(logger, step)
		if got := claimed(f); got != wf.UID {
			t.Errorf("claimed by %q, want the workflow pod %q", got, wf.UID)
		}
	})
}

// A record (or a runner's own sizing) that could never fit on its node,
// even empty, holds nothing: a forged record would otherwise hold any
// amount, past Filter.
func TestRecordBeyondNodeIsIgnored(t *testing.T) {
	forged := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation,
		`{"node":"n1","requests":{"cpu":"1000","pods":"1"},"source":"annotation","runnerUID":"r1"}`).Obj()
	oversized := runnerPod("r2").Node("n1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1000").Obj()
	f, _ := newTestFeeder(t, withObjects(threeUnits, forged, oversized))
	if got := f.store.List(); len(got) != 0 {
		t.Errorf("reservations %+v, want none beyond a 3-cpu node", got)
	}
}

// A pod whose put-off activation a later release made itself is no longer
// due: the timer would activate it a second time.
func TestReleaseAfterBackoffClearsDue(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	w := &WaitingPods{Clock: fake}
	w.SetBackoff(1, 10) // the scheduler's default
	p := st.MakePod().Namespace("arc").Name("p").UID("p").Obj()
	for range 3 {
		w.Add(p) // 4 s
	}
	all := func(*v1.Pod, time.Time) bool { return true }
	fake.Step(time.Second)
	if pods, wait := w.FreedRoom(all); len(pods) != 0 || wait != 3*time.Second {
		t.Fatalf("freedRoom 1 s after = %v, %v; want none now, due in 3s", pods, wait)
	}
	fake.Step(3 * time.Second) // the timer is late
	if pods, _ := w.FreedRoom(all); len(pods) != 1 {
		t.Fatalf("freedRoom once the backoff ended = %v, want the pod", pods)
	}
	if pods, wait := w.Due(); len(pods) != 0 || wait != 0 {
		t.Errorf("due after the release activated the pod = %v, %v; want nothing", pods, wait)
	}
}

func TestReleaseAndClaim(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	node := st.MakeNode().Name("n1").Obj()
	f, c := newTestFeeder(t, withObjects(runner, node))
	pods := c.client.CoreV1().Pods("arc")

	// A workflow pod pinned with nodeName claims the reservation.
	wf := workflowPod("r1").Node("n1").Obj()
	if _, err := pods.Create(ctx, wf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the workflow pod claims the reservation", func() bool {
		r, _ := f.store.Get(key("r1"))
		return r.ClaimedBy() == wf.UID
	})
	// It finishes: the reservation holds nothing any more.
	wf.Status.Phase = v1.PodSucceeded
	if _, err := pods.UpdateStatus(ctx, wf, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reservation is used up", func() bool {
		r, _ := f.store.Get(key("r1"))
		return r.UsedUp()
	})
	if got := f.store.SumOn("n1", func(*reservations.Reservation) bool { return true }); !got.IsZero() {
		t.Errorf("a used-up reservation still holds %s", got)
	}
	// The runner goes: the reservation is released.
	if err := pods.Delete(ctx, "r1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the runner's reservation is released", func() bool { return f.store.Empty() })
}

// The informer's claim and the release of an unclaimed reservation are
// routine: events only with reservationEvents, the shipped default off.
func TestRoutineHandlerEvents(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("reservationEvents=%v", on), func(t *testing.T) {
			ctx := context.Background()
			r1 := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
			r2 := runnerPod("r2").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r2")).Obj()
			args := defaultArgs()
			args.ReservationEvents = on
			f, c := newTestFeeder(t, withArgs(args), withObjects(r1, r2))
			pods := c.client.CoreV1().Pods("arc")
			wf := workflowPod("r1").Node("n1").Obj()
			if _, err := pods.Create(ctx, wf, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := pods.Delete(ctx, "r2", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "r1 claimed, r2 released", func() bool {
				r, _ := f.store.Get(key("r1"))
				_, held := f.store.Get(key("r2"))
				return r.ClaimedBy() == wf.UID && !held
			})
			// The handlers run in order: once r3 is seen, the claim's and
			// the release's handlers have returned, events sent.
			r3 := runnerPod("r3").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r3")).Obj()
			if _, err := pods.Create(ctx, r3, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "r3's reservation rebuilt", func() bool {
				_, ok := f.store.Get(key("r3"))
				return ok
			})
			var reasons []string
			for _, e := range c.events() {
				reasons = append(reasons, strings.Fields(e)[1])
			}
			slices.Sort(reasons)
			var want []string
			if on {
				want = []string{contract.ReasonReleased, contract.ReasonClaimed}
				slices.Sort(want)
			}
			if !slices.Equal(reasons, want) {
				t.Errorf("event reasons %q, want %q", reasons, want)
			}
		})
	}
}

// Defect 5: a standby replica runs the informer handlers too. It keeps its
// store warm but emits no event and exports no reservation gauge until it
// leads; then it exports the reservations it already holds.
func TestStandbySaysNothing(t *testing.T) {
	ctx := context.Background()
	leader := leadership.New()
	// Metrics are process-wide: a profile of its own for each run.
	profile := fmt.Sprintf("standby-%d", time.Now().UnixNano())
	runner := runnerPod("r1").SchedulerName(profile).Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	args := defaultArgs()
	args.ReservationEvents = true // the routine claim event is the one a standby must not send
	f, c := newTestFeeder(t, withArgs(args), withLeader(leader), withProfile(profile), withObjects(runner))
	if _, err := c.client.CoreV1().Pods("arc").Create(ctx, workflowPod("r1").Node("n1").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the standby's store sees the claim", func() bool {
		r, _ := f.store.Get(key("r1"))
		return r.ClaimedBy() != ""
	})
	if got := c.events(); len(got) != 0 {
		t.Errorf("the standby emitted events: %q", got)
	}
	gauge := metrics.Reservations.WithLabelValues(profile, reservations.PhaseClaimed)
	if v, _ := testutil.GetGaugeMetricValue(gauge); v != 0 {
		t.Errorf("the standby exported %v claimed reservations", v)
	}
	leader.Lead()
	eventually(t, "the new leader exports the reservation it holds", func() bool {
		v, _ := testutil.GetGaugeMetricValue(gauge)
		return v == 1
	})
}

// Defect 7: the scheduler's pod informer drops terminal pods, so a runner
// that finished reaches the handler as a delete: the release must still
// say it finished.
func TestTerminalRunnerDeliveredAsDelete(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	runner := runnerPod("r9").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r9")).Obj()
	args := defaultArgs()
	args.ReservationEvents = true // the release event says why
	f, c := newTestFeeder(t, withArgs(args), withObjects(runner))
	finished := runner.DeepCopy()
	finished.Status.Phase = v1.PodSucceeded
	counter := metrics.Releases.WithLabelValues("test", metrics.ReleaseRunnerFinished, "false")
	before, _ := testutil.GetCounterMetricValue(counter)
	f.OnPodDelete(logger, finished)
	after, _ := testutil.GetCounterMetricValue(counter)
	if after-before != 1 {
		t.Errorf("releases_total{reason=runner_finished} grew by %v, want 1", after-before)
	}
	if got := strings.Join(c.events(), "\n"); !strings.Contains(got, "finished") {
		t.Errorf("release event %q does not say the runner finished", got)
	}
}

// Defect 6: a hand-written reservation on a pod that no tandem profile
// scheduled, or one recorded for another pod, holds nothing.
func TestUntrustedRecordsAreIgnored(t *testing.T) {
	tests := map[string]*v1.Pod{
		"another scheduler's pod":  runnerPod("r1").SchedulerName("default-scheduler").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj(),
		"not a runner":             st.MakePod().Namespace("arc").Name("r1").UID("r1").SchedulerName("test").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj(),
		"recorded for another pod": runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("someone-else")).Obj(),
	}
	for name, pod := range tests {
		t.Run(name, func(t *testing.T) {
			f, _ := newTestFeeder(t, withObjects(pod))
			if got := f.store.List(); len(got) != 0 {
				t.Errorf("reservations = %+v, want none", got)
			}
		})
	}
}
