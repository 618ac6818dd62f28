package workflowreservation

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	configv1 "github.com/tandem-scheduler/tandem/pkg/apis/config/v1"
	"github.com/tandem-scheduler/tandem/pkg/controllers/placeholder"
	"github.com/tandem-scheduler/tandem/pkg/controllers/podworker"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// placeholderOf builds runner's placeholder holding cpu on n1, as the worker
// would.
func placeholderOf(runner *v1.Pod, cpu string) *v1.Pod {
	p := placeholder.For(runner, "n1", contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}), configv1.DefaultPlaceholderImage)
	p.UID = types.UID(p.Name)
	return p
}

// A placeholder's requests are the node's already: the reservation it holds
// must not be counted a second time, or every node with a placeholder would
// look fuller than it is. A pod that only pretends to be a runner's
// placeholder (another owner) holds nothing of the reservation, and the
// runner's own workflow pod may use what its placeholder holds.
func TestPlaceholderCountsOnce(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Req(units("1")).Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	node := st.MakeNode().Name("n1").Capacity(units("3")).Obj()
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	feederOf(pl).OnPod(klogger(t), runner)

	other := st.MakePod().Namespace("arc").Name("other").UID("other").Req(units("1")).Obj()
	forged := placeholderOf(runner, "1")
	forged.OwnerReferences[0].UID = "someone-else"
	wf := workflowPod("r1").Req(units("2")).Obj()
	tests := map[string]struct {
		pod     *v1.Pod
		onNode  []*v1.Pod
		wantFit bool
	}{
		"without a placeholder the reservation holds its room": {
			pod: other, onNode: []*v1.Pod{runner, st.MakePod().Name("filler").UID("filler").Req(units("1")).Obj()}, wantFit: false,
		},
		"with its placeholder there the room is counted once": {
			pod: other, onNode: []*v1.Pod{runner, placeholderOf(runner, "1")}, wantFit: true,
		},
		"a placeholder of another owner holds none of it": {
			pod: other, onNode: []*v1.Pod{runner, forged}, wantFit: false,
		},
		"the runner's workflow pod may use its placeholder's room": {
			pod: wf, onNode: []*v1.Pod{runner, placeholderOf(runner, "1")}, wantFit: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cs := framework.NewCycleState()
			if _, status := pl.PreFilter(ctx, cs, tc.pod, nil); !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			status := pl.Filter(ctx, cs, tc.pod, nodeInfo(node, tc.onNode...))
			if status.IsSuccess() != tc.wantFit {
				t.Errorf("Filter = %v, want fit %v", status, tc.wantFit)
			}
		})
	}
}

// A workflow pod scheduled by tandem takes its placeholder's room without a
// gap: it passes Filter on a node whose only room is its placeholder's (the
// in-tree Fit runs without it), the placeholder stays while the pod is
// pending, and at Permit the pod waits until the placeholder is deleted.
func TestPlaceholderHandoverAtPermit(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Req(units("1")).Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	// Pinned to the runner's node: a profile that did not hand over at
	// Permit would have the placeholder yield as soon as it exists.
	wf := workflowPod("r1").SchedulerName("test").Req(units("1")).NodeAffinityIn(v1.LabelHostname, []string{"n1"}, st.NodeSelectorTypeMatchExpressions).Obj()
	pl, h := newTestPlugin(t, podsModeArgs(), true, runner, wf)
	hold := waitForPod(t, h, "r1-hold", func(p *v1.Pod) bool { return p != nil })
	if !pl.handover() {
		t.Fatal("a Pods profile without the stock NodeResourcesFit does not hand over at Permit")
	}
	if _, want := feederOf(pl).WantPlaceholder(podworker.RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}); want == nil {
		t.Fatal("the placeholder is not wanted while its workflow pod, scheduled by tandem, is pending")
	}

	// 2 cpu: the runner's 1 and the placeholder's 1. (The fake clientset
	// sets no UIDs; NodeInfo needs one.)
	hold = hold.DeepCopy()
	hold.UID = "hold"
	node := nodeInfo(st.MakeNode().Name("n1").Capacity(units("2")).Obj(), runner, hold)
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, wf, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if status := pl.Filter(ctx, cs, wf, node); !status.IsSuccess() {
		t.Fatalf("Filter on the node whose only room is the placeholder's: %v", status)
	}
	other := st.MakePod().Namespace("arc").Name("other").UID("other").Req(units("1")).Obj()
	ocs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, ocs, other, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if status := pl.Filter(ctx, ocs, other, node); status.IsSuccess() || !strings.Contains(status.Message(), "Insufficient cpu") {
		t.Errorf("Filter of another pod = %v, want Insufficient cpu (the in-tree Fit counts the placeholder)", status)
	}

	if status := pl.Reserve(ctx, cs, wf, "n1"); !status.IsSuccess() {
		t.Fatalf("Reserve: %v", status)
	}
	waiting := h.wait(wf)
	status, timeout := pl.Permit(ctx, cs, wf, "n1")
	if status.Code() != fwk.Wait || timeout <= 0 {
		t.Fatalf("Permit = %v, %v; want Wait", status, timeout)
	}
	select {
	case v := <-waiting.verdict:
		if v != "allowed" {
			t.Fatalf("Permit's verdict: %s", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting workflow pod was never allowed")
	}
	if _, err := h.client.CoreV1().Pods("arc").Get(ctx, "r1-hold", metav1.GetOptions{}); err == nil {
		t.Error("the workflow pod was allowed while its placeholder still exists")
	}
}

// Found by scheduler_perf (ChurnPodsMode, whose goleak check failed every
// run): the goroutine Permit starts to hand a placeholder over outlived the
// scheduler by up to permitTimeout, 30 s, when its pod did not come to wait
// (rejected, deleted, or the scheduler stopping). It ends with the
// scheduler now.
func TestPermitHandOverEndsWithTheScheduler(t *testing.T) {
	runner := runnerPod("r1").Node("n1").Req(units("1")).Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	wf := workflowPod("r1").SchedulerName("test").Req(units("1")).Obj()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	client := fake.NewClientset(runner, wf, st.MakeNode().Name("n1").Obj())
	pl, h := newTestPluginIn(ctx, t, client, podsModeArgs(), nil, "", true)
	waitForPod(t, h, "r1-hold", func(p *v1.Pod) bool { return p != nil })

	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, wf, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if status := pl.Reserve(ctx, cs, wf, "n1"); !status.IsSuccess() {
		t.Fatalf("Reserve: %v", status)
	}
	// The pod never comes to wait (h.wait is not called): the hand-over
	// keeps looking for it.
	if status, _ := pl.Permit(ctx, cs, wf, "n1"); status.Code() != fwk.Wait {
		t.Fatalf("Permit = %v, want Wait", status)
	}
	handingOver := func() bool {
		buf := make([]byte, 1<<22)
		return bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("(*WorkflowReservation).Permit.func"))
	}
	if !handingOver() {
		t.Fatal("Permit started no hand-over")
	}

	stop()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !handingOver(), nil
	})
	if err != nil {
		t.Fatalf("the hand-over still runs 5 s after the scheduler stopped: %v", err)
	}
}

// In reservationMode Pods, Bind creates the runner's placeholder before its
// Binding, through the scheduler's own client: the room is held on the node
// from the moment the runner is bound (not only after the placeholder
// worker's next create, which waited behind a fixed 20/s budget in a burst).
// While the binding is in flight the worker keeps that placeholder; when
// the binding fails, Unreserve has the worker delete it.
func TestPlaceholderCreatedBeforeTheBinding(t *testing.T) {
	ctx := context.Background()
	for name, bindFails := range map[string]bool{"bound": false, "binding fails": true} {
		t.Run(name, func(t *testing.T) {
			runner := runnerPod("r1").SchedulerName("test").Req(units("1")).Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Obj()
			pl, h := newTestPlugin(t, podsModeArgs(), true, runner)
			var mu sync.Mutex
			var order []string
			h.client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case a.GetSubresource() == "binding":
					order = append(order, "binding")
					if bindFails {
						return true, nil, apierrors.NewConflict(v1.Resource("pods"), runner.Name, errors.New("the runner changed"))
					}
				case a.GetSubresource() == "":
					order = append(order, "create "+a.(clienttesting.CreateAction).GetObject().(*v1.Pod).Name)
				}
				return false, nil, nil
			})
			cs := reserveRunner(t, pl, runner, "n1")
			// The binding is in flight: the runner shows unbound, its
			// reservation is assumed. The worker wants the placeholder.
			if _, want := feederOf(pl).WantPlaceholder(podworker.RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}); want == nil || want.Spec.NodeName != "n1" {
				t.Fatalf("while r1's binding is in flight the worker wants placeholder %v, want one on n1", want)
			}
			status := pl.Bind(ctx, cs, runner, "n1")
			if status.IsSuccess() == bindFails {
				t.Fatalf("Bind = %v", status)
			}
			mu.Lock()
			if diff := cmp.Diff([]string{"create r1-hold", "binding"}, order[:min(2, len(order))]); diff != "" {
				t.Errorf("requests (-want,+got):\n%s", diff)
			}
			mu.Unlock()
			hold := waitForPod(t, h, "r1-hold", func(p *v1.Pod) bool { return p != nil })
			if got := hold.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 || hold.Spec.NodeName != "n1" {
				t.Errorf("placeholder requests cpu %s on %q, want the reservation's 2 on n1", got.String(), hold.Spec.NodeName)
			}
			if !bindFails {
				return
			}
			pl.Unreserve(ctx, cs, runner, "n1")
			waitForPod(t, h, "r1-hold", func(p *v1.Pod) bool { return p == nil })
		})
	}
}

// Found in review (issue 20): in a Pods profile that does not hand
// placeholders over at Permit (the stock Fit left enabled, logged), any
// pending pod labelled runner-pod=<B> made B's placeholder yield, also one
// that could never be scheduled to B's node, so anyone who may create pods in
// B's namespace freed B's room to other schedulers and the kubelet. A
// pending pod makes it yield only when it is pinned to B's node; an unpinned
// one takes the room only once it is bound there.
func TestUnpinnedPendingPodLeavesPlaceholderInPlace(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Req(units("1")).Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	pl, h := newTestPlugin(t, podsModeArgs(), true, runner)
	setLayout(pl, false, false) // a profile that leaves the Fit to the stock one: no hand-over at Permit
	if pl.handover() {
		t.Fatal("the profile still hands over at Permit")
	}
	waitForPod(t, h, "r1-hold", func(p *v1.Pod) bool { return p != nil })
	key := podworker.RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}
	nn := types.NamespacedName{Namespace: "arc", Name: "r1"}
	seen := func(n int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return len(feederOf(pl).WorkflowPods(nn)) == n, nil
		})
		if err != nil {
			t.Fatalf("the feeder does not see %d pods of r1: %v", n, err)
		}
	}

	stray := workflowPod("r1").Name("stray").UID("stray").NodeSelector(map[string]string{"no-such": "node"}).Obj()
	if _, err := h.client.CoreV1().Pods("arc").Create(ctx, stray, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen(1)
	if _, want := feederOf(pl).WantPlaceholder(key); want == nil {
		t.Fatal("a pending pod not pinned to r1's node made r1's placeholder yield")
	}

	pinned := workflowPod("r1").NodeAffinityIn(v1.LabelHostname, []string{"n1"}, st.NodeSelectorTypeMatchExpressions).Obj()
	if _, err := h.client.CoreV1().Pods("arc").Create(ctx, pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen(2)
	if _, want := feederOf(pl).WantPlaceholder(key); want != nil {
		t.Fatal("r1's placeholder stays while its workflow pod, pinned to its node, is pending")
	}
}
