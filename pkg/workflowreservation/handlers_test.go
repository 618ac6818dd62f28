package workflowreservation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/sizing/sizingtest"
)

func TestReleaseUnclaimedOnRunnerEndAndNodeDelete(t *testing.T) {
	ctx := context.Background()
	r1 := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	r2 := runnerPod("r2").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r2")).Obj()
	node := st.MakeNode().Name("n1").Obj()
	args := defaultArgs()
	args.ReservationEvents = true // the release of an unclaimed reservation is reported
	pl, h := newTestPlugin(t, args, true, r1, r2, node)
	if len(pl.store.List()) != 2 {
		t.Fatalf("want 2 reservations rebuilt, got %+v", pl.store.List())
	}
	// A pod turned away for lack of room waits for the release.
	turnedAway := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("2")).Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, turnedAway, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if status := pl.Filter(ctx, cs, turnedAway, nodeInfo(threeUnits)); status.IsSuccess() {
		t.Fatal("Filter let the pod take reserved room")
	}
	pl.PostFilter(ctx, cs, turnedAway, nil)
	// A pod that other plugins turned away is not activated by releases.
	other := st.MakePod().Namespace("arc").Name("q").UID("q").Obj()
	ocs := framework.NewCycleState()
	pl.PreFilter(ctx, ocs, other, nil)
	pl.PostFilter(ctx, ocs, other, nil)

	r1.Status.Phase = v1.PodFailed
	if _, err := h.client.CoreV1().Pods("arc").UpdateStatus(ctx, r1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failed runner's reservation is released", func() bool {
		_, ok := pl.store.Get(key("r1"))
		return !ok
	})
	// The event and the activation follow the release.
	released := false
	eventually(t, "an event for the released reservation", func() bool {
		for _, e := range drainEvents(h) {
			released = released || strings.Contains(e, contract.ReasonReleased)
		}
		return released
	})
	eventually(t, "the turned-away pod is activated once the release freed room", func() bool {
		got := h.activatedPods()
		return len(got) == 1 && got[0] == "arc/p"
	})
	if err := h.client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted node's reservations are released", func() bool { return pl.store.Empty() })
}

func TestHookTemplateConfigMapActivatesWaitingRunner(t *testing.T) {
	ctx := context.Background()
	runner := sizingtest.WithHookTemplate(runnerPod("r1").Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
	other := sizingtest.WithHookTemplate(runnerPod("r2").Obj(), "elsewhere", "/home/runner/pod-templates/default.yaml")
	pl, h := newTestPlugin(t, defaultArgs(), true)
	for _, pod := range []*v1.Pod{runner, other} {
		if _, status := pl.PreFilter(ctx, framework.NewCycleState(), pod, nil); status.Code() != fwk.UnschedulableAndUnresolvable {
			t.Fatalf("PreFilter(%s) = %v, want UnschedulableAndUnresolvable without its hook template", pod.Name, status)
		}
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "hooks"}, Data: map[string]string{"default.yaml": sizingtest.HookTemplate}}
	if _, err := h.client.CoreV1().ConfigMaps("arc").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the runner waiting for that ConfigMap is activated", func() bool {
		got := h.activatedPods()
		return len(got) == 1 && got[0] == "arc/r1"
	})
}

// A release that lands while a pod's scheduling cycle is running, after its
// Filter saw the room still reserved, activates the pod: the scheduler's own
// event for the change has already requeued it, for the cycle the release
// overtook, and nothing else would before the periodic flush.
func TestReleaseDuringCycleActivates(t *testing.T) {
	ctx := context.Background()
	r1 := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	pl, h := newTestPlugin(t, defaultArgs(), true, r1, st.MakeNode().Name("n1").Obj())
	p := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("3")).Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, p, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if status := pl.Filter(ctx, cs, p, nodeInfo(threeUnits, r1)); status.IsSuccess() {
		t.Fatal("Filter let the pod take reserved room")
	}
	if err := h.client.CoreV1().Pods("arc").Delete(ctx, "r1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The release is counted after the store let go of the room.
	eventually(t, "the deleted runner's reservation is released", func() bool { return feederOf(pl).Waiting().Releases() > 0 })
	if got := h.activatedPods(); len(got) != 0 {
		t.Fatalf("activated %v before the pod was turned away", got)
	}
	pl.PostFilter(ctx, cs, p, nil)
	if got := h.activatedPods(); len(got) != 1 || got[0] != "arc/p" {
		t.Errorf("activated %v after a cycle the release overtook, want [arc/p]", got)
	}
	// A later cycle, which saw the room free, activates nothing more.
	cs = framework.NewCycleState()
	pl.PreFilter(ctx, cs, p, nil)
	pl.PostFilter(ctx, cs, p, nil)
	if got := h.activatedPods(); len(got) != 1 {
		t.Errorf("activated %v, want only the one activation", got)
	}
}

// A release activates a pod turned away no sooner than the scheduler's own
// backoff would let it go (Handle.Activate skips it): a pod turned away
// again after every activation is retried once per backoff, not once per
// release.
func TestReleaseActivationRespectsBackoff(t *testing.T) {
	ctx := context.Background()
	logger := klogger(t)
	pl, h := newTestPlugin(t, defaultArgs(), false)
	fake := clocktesting.NewFakeClock(time.Now())
	feederOf(pl).Waiting().Clock = fake
	pl.store.Take(oneUnitReservation("r1"))
	p := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("3")).Obj()
	turnAway := func() {
		t.Helper()
		cs := framework.NewCycleState()
		pl.PreFilter(ctx, cs, p, nil)
		if pl.Filter(ctx, cs, p, nodeInfo(threeUnits)).IsSuccess() {
			t.Fatal("Filter let the pod take reserved room")
		}
		pl.PostFilter(ctx, cs, p, nil)
	}
	activations := func() int { return len(h.activatedPods()) }

	turnAway()
	fake.Step(300 * time.Millisecond)
	feederOf(pl).ActivateWaiting(logger)
	feederOf(pl).ActivateWaiting(logger)
	if n := activations(); n != 0 {
		t.Fatalf("%d activations 300 ms after the pod was turned away, want none before its 1 s backoff ends", n)
	}
	fake.Step(700 * time.Millisecond)
	eventually(t, "the pod is activated as its backoff ends", func() bool { return activations() == 1 })

	// Turned away a second time: 2 s.
	turnAway()
	fake.Step(100 * time.Millisecond)
	feederOf(pl).ActivateWaiting(logger)
	fake.Step(time.Second)
	if !fake.HasWaiters() || activations() != 1 {
		t.Fatalf("%d activations, activation pending %v, 1.1 s after the second rejection; want 1 and pending", activations(), fake.HasWaiters())
	}
	fake.Step(900 * time.Millisecond)
	eventually(t, "the pod is activated as its second backoff ends", func() bool { return activations() == 2 })
	if fake.HasWaiters() {
		t.Error("an activation is still scheduled with no pod due")
	}
}

// The backoff is the scheduler's as the args give it.
func TestActivationBackoffFromArgs(t *testing.T) {
	ctx := context.Background()
	logger := klogger(t)
	args := defaultArgs()
	args.PodInitialBackoffSeconds, args.PodMaxBackoffSeconds = 1, 1
	pl, h := newTestPlugin(t, args, false)
	fake := clocktesting.NewFakeClock(time.Now())
	feederOf(pl).Waiting().Clock = fake
	pl.store.Take(oneUnitReservation("r1"))
	p := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("3")).Obj()
	for i := range 4 {
		cs := framework.NewCycleState()
		pl.PreFilter(ctx, cs, p, nil)
		pl.Filter(ctx, cs, p, nodeInfo(threeUnits))
		pl.PostFilter(ctx, cs, p, nil)
		fake.Step(999 * time.Millisecond)
		feederOf(pl).ActivateWaiting(logger)
		if n := len(h.activatedPods()); n != i {
			t.Fatalf("rejection %d: %d activations before 1 s, want %d", i+1, n, i)
		}
		fake.Step(time.Millisecond)
		eventually(t, "the pod is activated after at most 1 s", func() bool { return len(h.activatedPods()) == i+1 })
	}
}

// Defect 1: ARC recreates a failed runner under the same name, and the
// failed incarnation's workflow pod (created before the new runner pod) may
// still run on the node. It is not the new runner's workflow pod: it must
// neither count as the new reservation's claim in Filter, nor claim it when
// an update of it reaches the handler, nor take it through the scheduler.
func TestStaleWorkflowPodOfEarlierIncarnation(t *testing.T) {
	ctx := context.Background()
	logger, _ := ktesting.NewTestContext(t)
	newRunner := runnerPod("r1").UID("r1-new").CreationTimestamp(later).Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Req(units("1")).Obj()
	stale := workflowPod("r1").UID("stale").CreationTimestamp(earlier).Req(units("1")).Node("n1").Obj()

	pl, _ := newTestPlugin(t, defaultArgs(), false)
	reserveRunner(t, pl, newRunner, "n1")

	// On a 3-cpu node: the new runner (1), the stale pod (1) and the new
	// reservation (1) leave nothing for another pod.
	other := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, other, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	boundRunner := newRunner.DeepCopy()
	boundRunner.Spec.NodeName = "n1"
	if status := pl.Filter(ctx, cs, other, nodeInfo(threeUnits, boundRunner, stale)); status.IsSuccess() {
		t.Error("Filter let a pod take the new runner's reserved room: the stale workflow pod counted as its claim")
	}

	feederOf(pl).OnPod(logger, stale)
	if r, _ := pl.store.Get(key("r1")); r.ClaimedBy() != "" {
		t.Errorf("the stale workflow pod claimed the new runner's reservation (claimedBy %q)", r.ClaimedBy())
	}

	pending := workflowPod("r1").UID("stale-pending").CreationTimestamp(earlier).Obj()
	wcs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, wcs, pending, nil); status.IsSuccess() {
		if s, _ := getCycleState(wcs); s != nil && s.kind == kindWorkflow {
			t.Error("a workflow pod created before the runner pod was given the runner's reservation")
		}
	}
}

// Defect 2, the other half: the informer shows the runner bound to another
// node than the one the store holds room on; the record on the pod wins.
func TestRunnerBoundElsewhereThanReserved(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	reserveRunner(t, pl, runner, "n1")
	elsewhere := boundWithRecord(t, pl, runner, "n1")
	elsewhere.Spec.NodeName = "n2"
	elsewhere.Annotations[contract.ReservationAnnotation] = strings.Replace(elsewhere.Annotations[contract.ReservationAnnotation], `"node":"n1"`, `"node":"n2"`, 1)
	feederOf(pl).OnPod(logger, elsewhere)
	if r, _ := pl.store.Get(key("r1")); r.Node != "n2" {
		t.Errorf("reservation on %q, want n2 where the runner is bound", r.Node)
	}
}

// Defect 6: the sizing annotation alone does not make a pod a runner.
func TestAnnotationAloneIsNotARunner(t *testing.T) {
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	pl.store.Take(oneUnitReservation("r0"))
	pod := st.MakePod().Namespace("arc").Name("x").UID("x").Annotation(contract.WorkflowRequestsAnnotation, "cpu=64").Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(context.Background(), cs, pod, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if s, _ := getCycleState(cs); s.kind != kindOther {
		t.Errorf("kind = %v, want an ordinary pod: it does not match the runner selector", s.kind)
	}
}

// Issue 20: with runnerNamespaces, a pod elsewhere that matches the runner
// selector is an ordinary pod: PreFilter does not size it, and a record on
// it, bound, rebuilds nothing. Anyone who may create pods in any namespace
// could otherwise have tandem hold room.
func TestRunnerOutsideRunnerNamespacesIsOrdinary(t *testing.T) {
	args := defaultArgs()
	args.RunnerNamespaces = []string{"team-a"}
	bound := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	pl, _ := newTestPlugin(t, args, true, bound)
	if got := pl.store.List(); len(got) != 0 {
		t.Errorf("reservations = %+v, want none: namespace arc is not one of runnerNamespaces", got)
	}
	pending := runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	cs := framework.NewCycleState()
	pl.store.Take(oneUnitReservation("r0")) // so that PreFilter does not skip
	if _, status := pl.PreFilter(context.Background(), cs, pending, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if s, _ := getCycleState(cs); s.kind != kindOther {
		t.Errorf("kind = %v, want an ordinary pod outside runnerNamespaces", s.kind)
	}
	inside := runnerPod("r3").Namespace("team-a").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	cs = framework.NewCycleState()
	if _, status := pl.PreFilter(context.Background(), cs, inside, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if s, _ := getCycleState(cs); s.kind != kindRunner {
		t.Errorf("kind = %v, want a runner in team-a", s.kind)
	}
}

// Issue 37: the pods recorded as an earlier runner's grew with every pod
// anyone labelled with the runner's name before it was bound, and the
// record must fit the Binding. Only pods not created before the runner are
// recorded (the hold rule tells the others by time), at most
// contract.MaxStaleWorkflowPods, with a Warning on the runner beyond.
func TestStaleListIsBounded(t *testing.T) {
	runner := runnerPod("r1").UID("r1-uid").CreationTimestamp(later).Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Req(units("1")).Obj()
	objs := []runtime.Object{runner, workflowPod("r1").Name("before").UID("before").CreationTimestamp(earlier).Obj()}
	for i := range contract.MaxStaleWorkflowPods + 4 {
		name := fmt.Sprintf("labelled-%02d", i)
		objs = append(objs, workflowPod("r1").Name(name).UID(name).CreationTimestamp(later).Obj())
	}
	pl, h := newTestPlugin(t, defaultArgs(), true, objs...)
	reserveRunner(t, pl, runner, "n1")
	r, ok := pl.store.Get(key("r1"))
	if !ok {
		t.Fatal("no reservation")
	}
	if len(r.Stale) != contract.MaxStaleWorkflowPods || slices.Contains(r.Stale, "before") {
		t.Errorf("stale workflow pods %q, want %d of those created with the runner", r.Stale, contract.MaxStaleWorkflowPods)
	}
	events := drainEvents(h)
	if !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, contract.ReasonTooManyWorkflowPods) }) {
		t.Errorf("events %q, want a %s Warning on the runner", events, contract.ReasonTooManyWorkflowPods)
	}
}

// Found by the shared hold-rule table: rebuilding a runner's reservation
// (a restart, a failover) claimed it for whichever of the runner's labelled
// pods the cache listed first. Hooks v0.8 label container-step pods with
// the runner too, so a step pod could claim, and the workflow pod was
// counted as a step pod: the step headroom it leaves was no longer held.
// The oldest labelled pod is the workflow pod, as the invariant checker
// and kubectl-tandem read it.
func TestRebuildClaimsForTheOldestWorkflowPod(t *testing.T) {
	logger := klogger(t)
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	created := func(sec int64) metav1.Time { return metav1.Unix(sec, 0) }
	runner := runnerPod("r1").Node("n1").CreationTimestamp(created(10)).Annotation(contract.ReservationAnnotation,
		`{"node":"n1","requests":{"cpu":"2","pods":"2"},"stepRequests":{"cpu":"500m","pods":"1"},"source":"annotation","runnerUID":"r1"}`).Obj()
	wf := workflowPod("r1").Node("n1").CreationTimestamp(created(20)).Req(units("1500m")).Obj()
	step := st.MakePod().Namespace("arc").Name("r1-step-0a1b").UID("r1-step-0a1b").Label("runner-pod", "r1").
		Node("n1").CreationTimestamp(created(30)).Req(units("300m")).Obj()
	feederOf(pl).UsePods(orderedPods{step, wf, runner})
	feederOf(pl).OnPod(logger, runner)
	if r, _ := pl.store.Get(key("r1")); r.ClaimedBy() != wf.UID {
		t.Fatalf("claimed by %q, want the workflow pod %q", r.ClaimedBy(), wf.UID)
	}
	held := pl.reservedOn(&cycleState{kind: kindOther}, nodeInfo(st.MakeNode().Name("n1").Capacity(units("8")).Obj(), runner, wf, step))
	if held.Amount.MilliCPU != 200 {
		t.Errorf("holds cpu=%dm, want 200m: the headroom of 500m less the step pod's 300m", held.Amount.MilliCPU)
	}
}

// orderedPods lists pods in the order given, as an informer's cache may.
type orderedPods []*v1.Pod

func (o orderedPods) List(labels.Selector) ([]*v1.Pod, error)    { return o, nil }
func (o orderedPods) Pods(string) corelisters.PodNamespaceLister { return o }
func (o orderedPods) Get(name string) (*v1.Pod, error)           { return nil, fmt.Errorf("not found: %s", name) }
