package workflowreservation

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/internal/tandemtest"
)

// pairArgs turns pair pods on, and their PairPodCreated events.
// waitForPod polls the fake clientset until cond holds for the named pod
// (nil: the pod does not exist).
func waitForPod(t *testing.T, h *fakeHandle, name string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	return tandemtest.WaitForPod(t, h.client, name, cond)
}

// A runner that a node would take alone but not with its workflow pod gets a
// pending pod of the pair's size, placed like it and owned by it, that the
// plugin never schedules; it goes when the runner is bound.
func TestPairPodForRunnerWaitingForPairRoom(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Req(units("1")).
		NodeSelector(map[string]string{"pool": "ci"}).Toleration("ci").Obj()
	runner.Spec.PriorityClassName = "ci-high"
	pl, h := newTestPlugin(t, pairArgs(), true, runner)

	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, runner, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if pl.Filter(ctx, cs, runner, nodeInfo(st.MakeNode().Name("n1").Capacity(units("2")).Obj())).IsSuccess() {
		t.Fatal("Filter placed the runner where its workflow pod does not fit")
	}
	pl.PostFilter(ctx, cs, runner, nil)

	pair := waitForPod(t, h, "r1-pair", func(p *v1.Pod) bool { return p != nil })
	if got, want := pair.Spec.Containers[0].Resources.Requests[v1.ResourceCPU], resource.MustParse("3"); got.Cmp(want) != 0 {
		t.Errorf("pair pod requests cpu %s, want %s (runner 1 + workflow pod 2)", got.String(), want.String())
	}
	if ref := metav1.GetControllerOf(pair); ref == nil || ref.UID != runner.UID {
		t.Errorf("pair pod's controller = %+v, want the runner (uid %s)", ref, runner.UID)
	}
	if pair.Spec.SchedulerName != runner.Spec.SchedulerName || pair.Spec.NodeSelector["pool"] != "ci" ||
		len(pair.Spec.Tolerations) != 1 || pair.Spec.PriorityClassName != "ci-high" {
		t.Errorf("pair pod is not placed like its runner: %+v", pair.Spec)
	}
	if pair.Spec.AutomountServiceAccountToken == nil || *pair.Spec.AutomountServiceAccountToken {
		t.Error("pair pod mounts a service account token")
	}
	if _, ok := pair.Labels["actions-ephemeral-runner"]; ok {
		t.Error("pair pod carries the runner selector's label: it would be taken for a runner")
	}
	var seen []string
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		seen = append(seen, drainEvents(h)...)
		return containsReason(seen, contract.ReasonPairPodCreated), nil
	}); err != nil {
		t.Errorf("events %v, want one %s on the runner", seen, contract.ReasonPairPodCreated)
	}

	// The scheduler never places it, and no cluster event requeues it.
	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), pair, nil); status.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("PreFilter of the pair pod = %v, want UnschedulableAndUnresolvable", status)
	}
	events, _ := pl.EventsToRegister(ctx)
	node := st.MakeNode().Name("big").Capacity(units("64")).Obj()
	for _, e := range events {
		if e.Event.Resource != fwk.Node {
			continue
		}
		if hint, _ := e.QueueingHintFn(klogger(t), pair, nil, node); hint != fwk.QueueSkip {
			t.Errorf("a new node requeues the pair pod (hint %v)", hint)
		}
	}

	// The runner is bound: its pair pod goes.
	bound := runner.DeepCopy()
	bound.Spec.NodeName = "n1"
	if _, err := h.client.CoreV1().Pods("arc").Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, h, "r1-pair", func(p *v1.Pod) bool { return p == nil })
}

// A runner pending for reasons of its own (no node takes it even alone) gets
// no pair pod: autoscalers see the runner itself.
func TestNoPairPodWhenRunnerAloneDoesNotFit(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Req(units("1")).Obj()
	pl, _ := newTestPlugin(t, pairArgs(), true, runner)
	cs := framework.NewCycleState()
	pl.PreFilter(ctx, cs, runner, nil)
	// No Filter of this plugin turned it away (another plugin did).
	pl.PostFilter(ctx, cs, runner, nil)
	if feederOf(pl).PairPods().Wanted(runner.UID) {
		t.Error("a pair pod is wanted for a runner no node turned away for its workflow pod")
	}
}

// With pairPods off nothing is created.
func TestPairPodsOff(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Req(units("1")).Obj()
	pl, _ := newTestPlugin(t, defaultArgs(), true, runner)
	cs := framework.NewCycleState()
	pl.PreFilter(ctx, cs, runner, nil)
	pl.Filter(ctx, cs, runner, nodeInfo(st.MakeNode().Name("n1").Capacity(units("2")).Obj()))
	pl.PostFilter(ctx, cs, runner, nil)
	if feederOf(pl).PairPods().Wanted(runner.UID) {
		t.Error("a pair pod is wanted with pairPods off")
	}
}

func containsReason(events []string, reason string) bool {
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") {
			return true
		}
	}
	return false
}

// Only a labelled pod controlled by the runner it names is a pair pod: a
// pod that merely carries the label is scheduled as usual.
func TestLabelAloneMakesNoPairPod(t *testing.T) {
	ctx := context.Background()
	pl, _ := newTestPlugin(t, pairArgs(), false)
	pod := st.MakePod().Namespace("arc").Name("x-pair").UID("x").Label(contract.PairPodLabel, "true").Obj()
	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), pod, nil); status.Code() == fwk.UnschedulableAndUnresolvable {
		t.Errorf("PreFilter rejected a pod that only carries the pair pod label: %v", status)
	}
}
