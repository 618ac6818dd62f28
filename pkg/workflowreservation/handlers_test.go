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
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/sizing/sizingtest"
)

// eventually polls cond; informer handlers run asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("timed out waiting until %s", what)
	}
}

func TestRebuildFromRunnerPods(t *testing.T) {
	bound := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	garbage := runnerPod("r2").Node("n1").Annotation(contract.ReservationAnnotation, "{").Obj()
	pending := runnerPod("r3").Annotation(contract.ReservationAnnotation, recordedFor("r3")).Obj()
	pl, h := newTestPlugin(t, defaultArgs(), true, bound, garbage, pending)

	if !pl.synced() {
		t.Fatal("handlers not synced after the informers synced")
	}
	got := pl.store.List()
	if len(got) != 1 || got[0].Runner != key("r1") || got[0].Node != "n1" || got[0].Size.MilliCPU != 1000 {
		t.Fatalf("rebuilt reservations = %+v, want only r1's cpu=1 on n1", got)
	}
	var warned bool
	for _, e := range drainEvents(h) {
		warned = warned || (strings.Contains(e, contract.ReasonInvalidReservation) && strings.Contains(e, "Warning"))
	}
	if !warned {
		t.Error("no Warning event for the unreadable reservation of r2")
	}
}

func TestRebuildSeesWorkflowPodFirst(t *testing.T) {
	// The informer may deliver the workflow pod before its runner; the
	// rebuilt reservation must still be claimed.
	wf := workflowPod("r1").Node("n1").Obj()
	runner := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	for name, objs := range map[string][]runtime.Object{"workflow first": {wf, runner}, "runner first": {runner, wf}} {
		t.Run(name, func(t *testing.T) {
			pl, _ := newTestPlugin(t, defaultArgs(), true, objs...)
			eventually(t, "the rebuilt reservation is claimed", func() bool {
				r, ok := pl.store.Get(key("r1"))
				return ok && r.ClaimedBy() == wf.UID
			})
		})
	}
}

func TestReleaseAndClaim(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	node := st.MakeNode().Name("n1").Obj()
	pl, h := newTestPlugin(t, defaultArgs(), true, runner, node)
	pods := h.client.CoreV1().Pods("arc")

	// A workflow pod pinned with nodeName claims the reservation.
	wf := workflowPod("r1").Node("n1").Obj()
	if _, err := pods.Create(ctx, wf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the workflow pod claims the reservation", func() bool {
		r, _ := pl.store.Get(key("r1"))
		return r.ClaimedBy() == wf.UID
	})
	// It finishes: the reservation holds nothing any more.
	wf.Status.Phase = v1.PodSucceeded
	if _, err := pods.UpdateStatus(ctx, wf, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reservation is used up", func() bool {
		r, _ := pl.store.Get(key("r1"))
		return r.UsedUp()
	})
	if got := pl.store.SumOn("n1", func(*reservations.Reservation) bool { return true }); !got.IsZero() {
		t.Errorf("a used-up reservation still holds %s", got)
	}
	// The runner goes: the reservation is released.
	if err := pods.Delete(ctx, "r1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the runner's reservation is released", func() bool { return pl.store.Empty() })
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
			pl, h := newTestPlugin(t, args, true, r1, r2)
			pods := h.client.CoreV1().Pods("arc")
			wf := workflowPod("r1").Node("n1").Obj()
			if _, err := pods.Create(ctx, wf, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := pods.Delete(ctx, "r2", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "r1 claimed, r2 released", func() bool {
				r, _ := pl.store.Get(key("r1"))
				_, held := pl.store.Get(key("r2"))
				return r.ClaimedBy() == wf.UID && !held
			})
			// The handlers run in order: once r3 is seen, the claim's and
			// the release's handlers have returned, events sent.
			r3 := runnerPod("r3").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r3")).Obj()
			if _, err := pods.Create(ctx, r3, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "r3's reservation rebuilt", func() bool {
				_, ok := pl.store.Get(key("r3"))
				return ok
			})
			var reasons []string
			for _, e := range drainEvents(h) {
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

// Once synced, the latch answers without asking the informers again (their
// HasSynced takes the lock of their queue).
func TestLatch(t *testing.T) {
	calls, answer := 0, false
	synced := latch(func() bool { calls++; return answer })
	for range 2 {
		if synced() {
			t.Fatal("synced() = true before the informers synced")
		}
	}
	if calls != 2 {
		t.Fatalf("%d calls before the informers synced, want 2", calls)
	}
	answer = true
	if !synced() || calls != 3 {
		t.Fatalf("synced() = false or %d calls, want true at the third call", calls)
	}
	answer = false // an informer never unsyncs; the latch would not see it
	for range 5 {
		if !synced() {
			t.Fatal("synced() = false after it reported true")
		}
	}
	if calls != 3 {
		t.Errorf("%d calls after the latch closed, want none beyond 3", calls)
	}
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
	eventually(t, "the deleted runner's reservation is released", func() bool { return pl.sh.waiting.Releases() > 0 })
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
	pl.sh.waiting.Clock = fake
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
	pl.activateWaiting(logger)
	pl.activateWaiting(logger)
	if n := activations(); n != 0 {
		t.Fatalf("%d activations 300 ms after the pod was turned away, want none before its 1 s backoff ends", n)
	}
	fake.Step(700 * time.Millisecond)
	eventually(t, "the pod is activated as its backoff ends", func() bool { return activations() == 1 })

	// Turned away a second time: 2 s.
	turnAway()
	fake.Step(100 * time.Millisecond)
	pl.activateWaiting(logger)
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

// A pod whose put-off activation a later release made itself is no longer
// due: the timer would activate it a second time.
func TestReleaseAfterBackoffClearsDue(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	w := &controllers.WaitingPods{Clock: fake}
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

// The backoff is the scheduler's as the args give it.
func TestActivationBackoffFromArgs(t *testing.T) {
	ctx := context.Background()
	logger := klogger(t)
	args := defaultArgs()
	args.PodInitialBackoffSeconds, args.PodMaxBackoffSeconds = 1, 1
	pl, h := newTestPlugin(t, args, false)
	fake := clocktesting.NewFakeClock(time.Now())
	pl.sh.waiting.Clock = fake
	pl.store.Take(oneUnitReservation("r1"))
	p := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("3")).Obj()
	for i := range 4 {
		cs := framework.NewCycleState()
		pl.PreFilter(ctx, cs, p, nil)
		pl.Filter(ctx, cs, p, nodeInfo(threeUnits))
		pl.PostFilter(ctx, cs, p, nil)
		fake.Step(999 * time.Millisecond)
		pl.activateWaiting(logger)
		if n := len(h.activatedPods()); n != i {
			t.Fatalf("rejection %d: %d activations before 1 s, want %d", i+1, n, i)
		}
		fake.Step(time.Millisecond)
		eventually(t, "the pod is activated after at most 1 s", func() bool { return len(h.activatedPods()) == i+1 })
	}
}

// orderedPods lists pods in the order given, as an informer's cache may.
type orderedPods []*v1.Pod

func (o orderedPods) List(labels.Selector) ([]*v1.Pod, error)    { return o, nil }
func (o orderedPods) Pods(string) corelisters.PodNamespaceLister { return o }
func (o orderedPods) Get(name string) (*v1.Pod, error)           { return nil, fmt.Errorf("not found: %s", name) }

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
	pl.pods = orderedPods{step, wf, runner}
	pl.onPod(logger, runner)
	if r, _ := pl.store.Get(key("r1")); r.ClaimedBy() != wf.UID {
		t.Fatalf("claimed by %q, want the workflow pod %q", r.ClaimedBy(), wf.UID)
	}
	held := pl.reservedOn(&preFilterState{kind: kindOther}, nodeInfo(st.MakeNode().Name("n1").Capacity(units("8")).Obj(), runner, wf, step))
	if held.Amount.MilliCPU != 200 {
		t.Errorf("holds cpu=%dm, want 200m: the headroom of 500m less the step pod's 300m", held.Amount.MilliCPU)
	}
}
