package workflowreservation

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics/testutil"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
)

// The reconciler repairs drift between the store and the cluster, with an
// event, a log line and a count per repair. Drift is made by editing the
// store behind the handlers' back, as a missed informer event would.
func TestReconcile(t *testing.T) {
	runner := func(name string) *st.PodWrapper {
		return runnerPod(name).Node("n1").Annotation(contract.ReservationAnnotation, recordedFor(name))
	}
	tests := map[string]struct {
		objs []runtime.Object
		// drift edits the store after the first reconcile.
		drift      func(pl *WorkflowReservation)
		wantRepair string
		// check inspects the store afterwards.
		check func(t *testing.T, pl *WorkflowReservation)
	}{
		"runner gone": {
			drift:      func(pl *WorkflowReservation) { pl.store.Take(oneUnitReservation("ghost")) },
			wantRepair: metrics.RepairRunnerGone,
			check: func(t *testing.T, pl *WorkflowReservation) {
				if _, ok := pl.store.Get(key("ghost")); ok {
					t.Error("reservation of a runner that is gone is still held")
				}
			},
		},
		"runner replaced by a newer pod of the same name": {
			objs: []runtime.Object{runner("r1").Obj()},
			drift: func(pl *WorkflowReservation) {
				r := oneUnitReservation("r1")
				r.RunnerUID = "older"
				pl.store.Take(r)
			},
			wantRepair: metrics.RepairRunnerGone,
		},
		"node gone": {
			objs: []runtime.Object{runnerPod("r9").Node("n9").Annotation(contract.ReservationAnnotation, strings.Replace(recordedFor("r9"), `"n1"`, `"n9"`, 1)).Obj()},
			drift: func(pl *WorkflowReservation) {
				r := oneUnitReservation("r9")
				r.Node = "n9"
				pl.store.Rebuild(r)
			},
			wantRepair: metrics.RepairNodeGone,
			check: func(t *testing.T, pl *WorkflowReservation) {
				if _, ok := pl.store.Get(key("r9")); ok {
					t.Error("reservation on a node that is gone is still held")
				}
			},
		},
		"runner bound elsewhere than reserved": {
			objs: []runtime.Object{runner("r1").Obj()},
			drift: func(pl *WorkflowReservation) {
				r := oneUnitReservation("r1")
				r.Node = "gone"
				pl.store.Rebuild(r)
			},
			wantRepair: metrics.RepairMoved, // the runner is bound to n1, which its record names
			check: func(t *testing.T, pl *WorkflowReservation) {
				if r, _ := pl.store.Get(key("r1")); r.Node != "n1" {
					t.Errorf("reservation on %q, want n1 where the runner is bound", r.Node)
				}
			},
		},
		"claim missed": {
			objs:       []runtime.Object{runner("r1").Obj(), workflowPod("r1").Node("n1").Obj()},
			drift:      func(pl *WorkflowReservation) { pl.store.Take(oneUnitReservation("r1")) },
			wantRepair: metrics.RepairClaimed,
			check: func(t *testing.T, pl *WorkflowReservation) {
				if r, _ := pl.store.Get(key("r1")); r.ClaimedBy() != "r1-workflow" {
					t.Errorf("claimedBy = %q, want r1-workflow", r.ClaimedBy())
				}
			},
		},
		"claiming workflow pod gone": {
			objs: []runtime.Object{runner("r1").Obj()},
			drift: func(pl *WorkflowReservation) {
				pl.store.Take(claimedBy(oneUnitReservation("r1"), "vanished"))
			},
			wantRepair: metrics.RepairFinished,
			check: func(t *testing.T, pl *WorkflowReservation) {
				if r, _ := pl.store.Get(key("r1")); !r.UsedUp() {
					t.Error("reservation whose workflow pod is gone still holds room")
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pl, h := newTestPlugin(t, defaultArgs(), true, tc.objs...)
			drainEvents(h)
			tc.drift(pl)
			counter := metrics.Repairs.WithLabelValues("test", tc.wantRepair)
			before, _ := testutil.GetCounterMetricValue(counter)
			pl.feeder.Reconcile(context.Background())
			after, _ := testutil.GetCounterMetricValue(counter)
			if after-before != 1 {
				t.Errorf("repairs_total{kind=%s} grew by %v, want 1", tc.wantRepair, after-before)
			}
			if events := strings.Join(drainEvents(h), "\n"); !strings.Contains(events, "Warning "+contract.ReasonRepaired) {
				t.Errorf("events %q, want a Warning %s", events, contract.ReasonRepaired)
			}
			if tc.check != nil {
				tc.check(t, pl)
			}
			// A second pass finds nothing more to repair.
			before, _ = testutil.GetCounterMetricValue(counter)
			pl.feeder.Reconcile(context.Background())
			if after, _ := testutil.GetCounterMetricValue(counter); after != before {
				t.Errorf("a second pass repaired %v more", after-before)
			}
		})
	}
}

// A reservation rebuilt after a restart whose workflow pod already finished
// (terminal pods are not in the scheduler's informer) holds nothing: the
// reconciler's first pass, when the replica starts leading, sees the
// finished pod through the API.
func TestReconcileFinishedWorkflowPodBeforeRestart(t *testing.T) {
	r1 := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	finished := workflowPod("r1").Node("n1").Phase(v1.PodSucceeded).Obj()
	pl, _ := newTestPlugin(t, defaultArgs(), true, r1, finished)
	if r, ok := pl.store.Get(key("r1")); !ok || !r.UsedUp() {
		t.Errorf("reservation %+v (found %v), want it rebuilt and used up", r, ok)
	}
}

// A standby reconciles too, silently: it holds what the leader holds (here
// a reservation whose workflow pod finished before the restart, which only
// the reconciler sees), so that a failover loses nothing.
func TestStandbyReconciles(t *testing.T) {
	r1 := runnerPod("r1").SchedulerName("sb").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	finished := workflowPod("r1").Node("n1").Phase(v1.PodSucceeded).Obj()
	pl, h := newTestReplica(t, defaultArgs(), leadership.New(), "sb", true, r1, finished)
	eventually(t, "the standby uses up the reservation of the finished workflow pod", func() bool {
		r, ok := pl.store.Get(key("r1"))
		return ok && r.UsedUp()
	})
	if got := drainEvents(h); len(got) != 0 {
		t.Errorf("the standby reported its repair: %q", got)
	}
}

// Issue 20: the reconciler held room for any bound runner without a valid
// record, also one its author pinned with nodeName in a namespace without
// ARC (a pod asking cpu=2500m held it on the node, full or not). tandem's
// Bind writes the record in the Binding itself, so such a runner is one
// tandem did not bind: it holds nothing, and is told so once.
func TestUnrecordedRunnerHoldsNothing(t *testing.T) {
	for name, pod := range map[string]*v1.Pod{
		"no record": runnerPod("r1").Node("n1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2500m").Obj(),
		"a record of an older build (no runnerUID)": runnerPod("r1").Node("n1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").
			Annotation(contract.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"2","pods":"1"},"source":"annotation"}`).Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			pl, h := newTestPlugin(t, defaultArgs(), true, pod)
			for range 2 {
				pl.feeder.Reconcile(context.Background())
			}
			if !pl.store.Empty() {
				t.Errorf("reservations %v, want none for a runner tandem did not bind", heldReservations(pl))
			}
			var warned []string
			for _, e := range drainEvents(h) {
				if strings.Contains(e, "Warning "+contract.ReasonNotRecorded) {
					warned = append(warned, e)
				}
			}
			if len(warned) != 1 || !strings.Contains(warned[0], "no room is held for its workflow pod") {
				t.Errorf("warnings %q, want one %s saying it holds no room", warned, contract.ReasonNotRecorded)
			}
		})
	}
}

// Room the reconciler frees is announced by no cluster event: it activates
// the pods turned away.
func TestReconcileReleaseActivates(t *testing.T) {
	ctx := context.Background()
	pl, h := newTestPlugin(t, defaultArgs(), true)
	pl.store.Take(oneUnitReservation("ghost"))
	p := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("3")).Obj()
	cs := framework.NewCycleState()
	pl.PreFilter(ctx, cs, p, nil)
	if pl.Filter(ctx, cs, p, nodeInfo(threeUnits)).IsSuccess() {
		t.Fatal("Filter let the pod take reserved room")
	}
	pl.PostFilter(ctx, cs, p, nil)
	pl.feeder.Reconcile(ctx)
	// Once its backoff (1 s) is over.
	eventually(t, "the pod is activated after the reconciler released the ghost's room", func() bool {
		got := h.activatedPods()
		return len(got) == 1 && got[0] == "arc/p"
	})
}

// A runner tandem bound without a reservation, because no source sized it
// (WorkflowSizeUnknown), carries no record either: it is not told that
// tandem did not bind it.
func TestUnsizedRunnerIsNotToldUnrecorded(t *testing.T) {
	args := defaultArgs()
	args.DefaultWorkflowRequests, args.DefaultStepRequests = nil, nil
	pl, h := newTestPlugin(t, args, true, runnerPod("r1").Node("n1").Obj())
	pl.feeder.Reconcile(context.Background())
	for _, e := range drainEvents(h) {
		if strings.Contains(e, contract.ReasonNotRecorded) {
			t.Errorf("event %q on a runner bound without a size", e)
		}
	}
}
