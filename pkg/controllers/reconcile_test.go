package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/sizing"
)

// Issue 37: the reconciler listed every terminal pod labelled as a workflow
// pod in the whole cluster each interval, and looked at each of them for
// each reservation: anyone who may create pods anywhere could make that as
// large as they liked. It now lists the runner namespaces only.
func TestReconcilerReadsOnlyTheRunnerNamespaces(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finished := func(ns, name string) *v1.Pod {
		return st.MakePod().Namespace(ns).Name(name).Label("runner-pod", "r1").Phase(v1.PodSucceeded).Obj()
	}
	client := fake.NewClientset(finished("arc", "wf"), finished("elsewhere", "forged"))
	c := &informerCluster{client: client, informers: informers.NewSharedInformerFactory(client, 0)}
	sz, err := sizing.NewSizer(&config.WorkflowReservationArgs{})
	if err != nil {
		t.Fatal(err)
	}
	f := NewFeeder(nil)
	profile := &Profile{Name: "test", Runners: labels.Everything(), Namespaces: sets.New("arc"), RunnerPodLabel: "runner-pod",
		Recorder: events.NewFakeRecorder(10), Sizer: sz, ReservationMode: config.ReservationModeMemory}
	if err := f.join(ctx, c, profile, nil, Config{ReconcileInterval: time.Hour, NoWorkflowPodGrace: time.Minute}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	f.Reconcile(ctx)
	var lists []string
	for _, a := range client.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && l.GetResource().Resource == "pods" {
			lists = append(lists, l.GetNamespace())
		}
	}
	if len(lists) != 1 || lists[0] != "arc" {
		t.Errorf("the reconciler listed pods in %q, want only the runner namespace arc", lists)
	}
	logger, _ := ktesting.NewTestContext(t)
	got := f.finishedWorkflowPods(ctx, logger)
	if len(got.byUID) != 1 || len(got.byRunner[types.NamespacedName{Namespace: "arc", Name: "r1"}]) != 1 {
		t.Errorf("finished workflow pods %v, want arc's only, under its runner", got.byUID)
	}
}

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
		drift      func(f *Feeder)
		wantRepair string
		// check inspects the store afterwards.
		check func(t *testing.T, f *Feeder)
	}{
		"runner gone": {
			drift:      func(f *Feeder) { f.store.Take(oneUnitReservation("ghost")) },
			wantRepair: metrics.RepairRunnerGone,
			check: func(t *testing.T, f *Feeder) {
				if _, ok := f.store.Get(key("ghost")); ok {
					t.Error("reservation of a runner that is gone is still held")
				}
			},
		},
		"runner replaced by a newer pod of the same name": {
			objs: []runtime.Object{runner("r1").Obj()},
			drift: func(f *Feeder) {
				r := oneUnitReservation("r1")
				r.RunnerUID = "older"
				f.store.Take(r)
			},
			wantRepair: metrics.RepairRunnerGone,
		},
		"node gone": {
			objs: []runtime.Object{runnerPod("r9").Node("n9").Annotation(contract.ReservationAnnotation, strings.Replace(recordedFor("r9"), `"n1"`, `"n9"`, 1)).Obj()},
			drift: func(f *Feeder) {
				r := oneUnitReservation("r9")
				r.Node = "n9"
				f.store.Rebuild(r)
			},
			wantRepair: metrics.RepairNodeGone,
			check: func(t *testing.T, f *Feeder) {
				if _, ok := f.store.Get(key("r9")); ok {
					t.Error("reservation on a node that is gone is still held")
				}
			},
		},
		"runner bound elsewhere than reserved": {
			objs: []runtime.Object{runner("r1").Obj()},
			drift: func(f *Feeder) {
				r := oneUnitReservation("r1")
				r.Node = "gone"
				f.store.Rebuild(r)
			},
			wantRepair: metrics.RepairMoved, // the runner is bound to n1, which its record names
			check: func(t *testing.T, f *Feeder) {
				if r, _ := f.store.Get(key("r1")); r.Node != "n1" {
					t.Errorf("reservation on %q, want n1 where the runner is bound", r.Node)
				}
			},
		},
		"claim missed": {
			objs:       []runtime.Object{runner("r1").Obj(), workflowPod("r1").Node("n1").Obj()},
			drift:      func(f *Feeder) { f.store.Take(oneUnitReservation("r1")) },
			wantRepair: metrics.RepairClaimed,
			check: func(t *testing.T, f *Feeder) {
				if r, _ := f.store.Get(key("r1")); r.ClaimedBy() != "r1-workflow" {
					t.Errorf("claimedBy = %q, want r1-workflow", r.ClaimedBy())
				}
			},
		},
		"claiming workflow pod gone": {
			objs: []runtime.Object{runner("r1").Obj()},
			drift: func(f *Feeder) {
				f.store.Take(claimedBy(oneUnitReservation("r1"), "vanished"))
			},
			wantRepair: metrics.RepairFinished,
			check: func(t *testing.T, f *Feeder) {
				if r, _ := f.store.Get(key("r1")); !r.UsedUp() {
					t.Error("reservation whose workflow pod is gone still holds room")
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, c := newTestFeeder(t, withObjects(tc.objs...))
			c.events()
			tc.drift(f)
			counter := metrics.Repairs.WithLabelValues("test", tc.wantRepair)
			before, _ := testutil.GetCounterMetricValue(counter)
			f.Reconcile(context.Background())
			after, _ := testutil.GetCounterMetricValue(counter)
			if after-before != 1 {
				t.Errorf("repairs_total{kind=%s} grew by %v, want 1", tc.wantRepair, after-before)
			}
			if events := strings.Join(c.events(), "\n"); !strings.Contains(events, "Warning "+contract.ReasonRepaired) {
				t.Errorf("events %q, want a Warning %s", events, contract.ReasonRepaired)
			}
			if tc.check != nil {
				tc.check(t, f)
			}
			// A second pass finds nothing more to repair.
			before, _ = testutil.GetCounterMetricValue(counter)
			f.Reconcile(context.Background())
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
	f, _ := newTestFeeder(t, withObjects(r1, finished))
	if r, ok := f.store.Get(key("r1")); !ok || !r.UsedUp() {
		t.Errorf("reservation %+v (found %v), want it rebuilt and used up", r, ok)
	}
}

// A standby reconciles too, silently: it holds what the leader holds (here
// a reservation whose workflow pod finished before the restart, which only
// the reconciler sees), so that a failover loses nothing.
func TestStandbyReconciles(t *testing.T) {
	r1 := runnerPod("r1").SchedulerName("sb").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	finished := workflowPod("r1").Node("n1").Phase(v1.PodSucceeded).Obj()
	f, c := newTestFeeder(t, withLeader(leadership.New()), withProfile("sb"), withObjects(r1, finished))
	eventually(t, "the standby uses up the reservation of the finished workflow pod", func() bool {
		r, ok := f.store.Get(key("r1"))
		return ok && r.UsedUp()
	})
	if got := c.events(); len(got) != 0 {
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
			f, c := newTestFeeder(t, withObjects(pod))
			for range 2 {
				f.Reconcile(context.Background())
			}
			if !f.store.Empty() {
				t.Errorf("reservations %v, want none for a runner tandem did not bind", heldReservations(f))
			}
			var warned []string
			for _, e := range c.events() {
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

// A runner tandem bound without a reservation, because no source sized it
// (WorkflowSizeUnknown), carries no record either: it is not told that
// tandem did not bind it.
func TestUnsizedRunnerIsNotToldUnrecorded(t *testing.T) {
	args := defaultArgs()
	args.DefaultWorkflowRequests, args.DefaultStepRequests = nil, nil
	f, c := newTestFeeder(t, withArgs(args), withObjects(runnerPod("r1").Node("n1").Obj()))
	f.Reconcile(context.Background())
	for _, e := range c.events() {
		if strings.Contains(e, contract.ReasonNotRecorded) {
			t.Errorf("event %q on a runner bound without a size", e)
		}
	}
}
