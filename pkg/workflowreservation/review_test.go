package workflowreservation

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// The regressions of the defects a review of the reliability work found:
// each test failed before its fix.

// A bind reported a failure but went through; the runner, requeued before
// the queue saw it bound, is scheduled again: that cycle's Reserve must not
// replace the bound reservation, nor its Unreserve drop it.
func TestReserveKeepsBoundReservation(t *testing.T) {
	ctx := context.Background()
	logger := klogger(t)
	pl, h := newTestPlugin(t, defaultArgs(), false)
	pending := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	pl.useListerOf(t, h)
	reserveRunner(t, pl, pending, "n1")
	pl.onPod(logger, boundWithRecord(t, pl, pending, "n1"))

	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, pending, nil); !status.IsSuccess() {
		t.Fatal(status)
	}
	if status := pl.Reserve(ctx, cs, pending, "n2"); status.IsSuccess() {
		t.Error("Reserve of an already bound runner succeeded")
	}
	pl.Unreserve(ctx, cs, pending, "n2")
	if r, ok := pl.store.Get(key("r1")); !ok || r.Node != "n1" {
		t.Errorf("reservation %+v (found %v), want it kept on n1", r, ok)
	}
}

// A record (or a runner's own sizing) that could never fit on its node,
// even empty, holds nothing: a forged record would otherwise hold any
// amount, past Filter.
func TestRecordBeyondNodeIsIgnored(t *testing.T) {
	forged := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation,
		`{"node":"n1","requests":{"cpu":"1000","pods":"1"},"source":"annotation","runnerUID":"r1"}`).Obj()
	oversized := runnerPod("r2").Node("n1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1000").Obj()
	pl, _ := newTestPlugin(t, defaultArgs(), true, threeUnits, forged, oversized)
	if got := pl.store.List(); len(got) != 0 {
		t.Errorf("reservations %+v, want none beyond a 3-cpu node", got)
	}
}

// A nominated runner that goes frees the pair room AddPod protected.
func TestHintNominatedRunnerDeleted(t *testing.T) {
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	deleted := runnerPod("r3").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").NominatedNodeName("n1").Obj()
	if got, _ := pl.isSchedulableAfterPodDeleted(klogger(t), st.MakePod().Name("p").Obj(), deleted, nil); got != fwk.Queue {
		t.Errorf("hint = %v, want Queue", got)
	}
}

// Status updates of a counted workflow pod change nothing: they neither
// take the store's write lock nor invalidate the node's cached held room.
func TestNoOpUpdatesKeepNodeVersion(t *testing.T) {
	logger := klogger(t)
	pl, h := newTestPlugin(t, defaultArgs(), false)
	pl.useListerOf(t, h)
	pl.store.Take(oneUnitReservation("r1"))
	wf := workflowPod("r1").Node("n1").Obj()
	pl.onPod(logger, wf)
	v := pl.store.NodeVersion("n1")
	for range 5 {
		pl.onPod(logger, wf)
	}
	if got := pl.store.NodeVersion("n1"); got != v {
		t.Errorf("5 no-op updates moved the node's version from %d to %d", v, got)
	}
}

// A job's workflow pod that exists but waits to be scheduled (kube-scheduler
// mode, a busy queue) still claims its reservation after the grace.
func TestGraceKeepsPendingWorkflowPod(t *testing.T) {
	logger := klogger(t)
	pl, h := newTestPlugin(t, defaultArgs(), false)
	wf := workflowPod("r1").NodeAffinityIn(v1.LabelHostname, []string{"n1"}, st.NodeSelectorTypeMatchExpressions).Obj()
	pl.useListerOf(t, h, wf)
	pl.store.Take(oneUnitReservation("r1"))
	pl.releaseWithoutWorkflowPod(logger, key("r1"), "r1")
	cs := framework.NewCycleState()
	pl.PreFilter(context.Background(), cs, wf, nil)
	if s, _ := getPreFilterState(cs); s == nil || s.kind != kindWorkflow {
		t.Errorf("the pending workflow pod lost its reservation to the grace")
	}
}

// A job without a container may still run container steps: the grace gives
// back the workflow room and keeps the step headroom.
func TestGraceKeepsStepHeadroom(t *testing.T) {
	pl, h := newTestPlugin(t, defaultArgs(), false)
	pl.useListerOf(t, h)
	pl.store.Take(withStep())
	pl.releaseWithoutWorkflowPod(klogger(t), key("r1"), "r1")
	r, _ := pl.store.Get(key("r1"))
	if got, _ := r.Holds(reservations.RunnerPods{}); got.MilliCPU != 1000 || got.Pods != 1 {
		t.Errorf("holds cpu=%dm pods=%d after the grace, want the step headroom cpu=1000m pods=1", got.MilliCPU, got.Pods)
	}
}

// The job the EphemeralRunner showed when the reservation was taken is
// recorded, so that a standby or a new leader does not take it for this
// runner's job and release its room.
func TestStaleJobRecorded(t *testing.T) {
	r := oneUnitReservation("r1")
	r.StaleJob = "j0"
	value, err := encodeReservation(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := reservationFromPod(runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, value).Obj())
	if err != nil || back.StaleJob != "j0" {
		t.Fatalf("rebuilt %+v, %v; want staleJob j0", back, err)
	}
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	pl.store.Take(back)
	pl.onEphemeralRunner(klogger(t), &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "arc", "name": "r1"}, "status": map[string]any{"jobId": "j0"},
	}})
	if got, _ := pl.store.Get(key("r1")); !got.JobStarted().IsZero() {
		t.Error("the earlier runner's job started the grace of the rebuilt reservation")
	}
}

// A standby reconciles too, silently: it holds what the leader recovered,
// so that a failover loses nothing.
func TestStandbyHoldsRecovered(t *testing.T) {
	runner := runnerPod("r1").SchedulerName("sb").Node("n1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	pl, h := newTestReplica(t, defaultArgs(), leadership.New(), "sb", true, runner)
	eventually(t, "the standby recovers the runner's reservation", func() bool { return !pl.store.Empty() })
	if got := drainEvents(h); len(got) != 0 {
		t.Errorf("the standby reported its repair: %q", got)
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
	pl.reconcile(ctx)
	// Once its backoff (1 s) is over.
	eventually(t, "the pod is activated after the reconciler released the ghost's room", func() bool {
		got := h.activatedPods()
		return len(got) == 1 && got[0] == "arc/p"
	})
}

// A dry run that spares the workflow pod but not its runner keeps the
// runner's reservation out.
func TestReprieveWorkflowPodKeepsRunnerRemoved(t *testing.T) {
	ctx := context.Background()
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	pl.store.Take(claimedBy(withStep(), "r1-workflow"))
	runner := runnerPod("r1").Req(units("1")).Node("n1").Obj()
	wf := workflowPod("r1").Req(units("2")).Node("n1").Obj()
	pod := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj()
	cs := framework.NewCycleState()
	pl.PreFilter(ctx, cs, pod, nil)
	ni := nodeInfo(st.MakeNode().Name("n1").Capacity(units("4")).Obj(), runner, wf)
	pl.RemovePod(ctx, cs, pod, podInfo(t, runner), ni)
	pl.RemovePod(ctx, cs, pod, podInfo(t, wf), ni)
	pl.AddPod(ctx, cs, pod, podInfo(t, wf), ni)
	if s, _ := getPreFilterState(cs); !s.adjust.isRemoved("r1") {
		t.Error("sparing the workflow pod brought back the reservation of the runner still removed")
	}
}

// What a node's reservations hold is cached: the cache must follow the
// store and the node's pods, and never serve what it did not compute for
// any pod (a workflow pod's own reservation, a dry run).
func TestHeldCache(t *testing.T) {
	ctx := context.Background()
	other := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj()
	state := func(pl *WorkflowReservation, pod *v1.Pod) *preFilterState {
		cs := framework.NewCycleState()
		pl.PreFilter(ctx, cs, pod, nil)
		s, err := getPreFilterState(cs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	pl.store.Take(oneUnitReservation("r1"))
	ni := nodeInfo(threeUnits, runnerPod("r1").Req(units("1")).Node("n1").Obj())
	s := state(pl, other)
	if got := pl.reservedOn(s, ni).Amount.MilliCPU; got != 1000 {
		t.Fatalf("held %dm, want 1000m", got)
	}
	// The store changes: a second reservation on the node.
	pl.store.Take(oneUnitReservation("r2"))
	if got := pl.reservedOn(s, ni).Amount.MilliCPU; got != 2000 {
		t.Errorf("after a store change held %dm, want 2000m", got)
	}
	// The node's pods change: r1's workflow pod arrives (new generation).
	arrived := nodeInfo(threeUnits, runnerPod("r1").Req(units("1")).Node("n1").Obj(), workflowPod("r1").Req(units("1")).Node("n1").Obj())
	if got := pl.reservedOn(s, arrived).Amount.MilliCPU; got != 1000 {
		t.Errorf("after r1's workflow pod arrived held %dm, want 1000m (r2's)", got)
	}
	// A workflow pod does not count its own reservation, and what it sees
	// is not served to the next ordinary pod.
	wf := state(pl, workflowPod("r2").Req(units("1")).Obj())
	if got := pl.reservedOn(wf, ni).Amount.MilliCPU; got != 1000 {
		t.Errorf("r2's workflow pod sees %dm held, want 1000m (r1's only)", got)
	}
	if got := pl.reservedOn(s, ni).Amount.MilliCPU; got != 2000 {
		t.Errorf("after the workflow pod's call an ordinary pod sees %dm, want 2000m", got)
	}
	// A dry run without r1 is neither served nor cached.
	dry := s.Clone().(*preFilterState)
	dry.adjust.removed = addUID(dry.adjust.removed, "r1")
	if got := pl.reservedOn(dry, ni).Amount.MilliCPU; got != 1000 {
		t.Errorf("dry run without r1 sees %dm, want 1000m", got)
	}
	if got := pl.reservedOn(s, ni).Amount.MilliCPU; got != 2000 {
		t.Errorf("after the dry run an ordinary pod sees %dm, want 2000m", got)
	}
}
