package workflowreservation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/workflowreservation/metrics"
)

// The regressions of the accounting defects found in review: each test
// failed before its fix.

var (
	earlier = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	later   = metav1.NewTime(time.Now().Truncate(time.Second))
)

// reserveRunner runs a runner through PreFilter and Reserve on node.
func reserveRunner(t *testing.T, pl *WorkflowReservation, pod *v1.Pod, node string) *framework.CycleState {
	t.Helper()
	ctx := context.Background()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, pod, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter(%s): %v", pod.Name, status)
	}
	if status := pl.Reserve(ctx, cs, pod, node); !status.IsSuccess() {
		t.Fatalf("Reserve(%s): %v", pod.Name, status)
	}
	return cs
}

// boundWithRecord returns pod as the informer shows it once the Binding that
// carries its reservation (as Bind writes it) went through.
func boundWithRecord(t *testing.T, pl *WorkflowReservation, pod *v1.Pod, node string) *v1.Pod {
	t.Helper()
	r, ok := pl.store.Get(key(pod.Name))
	if !ok {
		t.Fatalf("no reservation for %s", pod.Name)
	}
	value, err := encodeReservation(&r)
	if err != nil {
		t.Fatal(err)
	}
	bound := pod.DeepCopy()
	bound.Spec.NodeName = node
	if bound.Annotations == nil {
		bound.Annotations = map[string]string{}
	}
	bound.Annotations[contract.ReservationAnnotation] = value
	return bound
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

	pl.onPod(logger, stale)
	if r, _ := pl.store.Get(key("r1")); r.ClaimedBy() != "" {
		t.Errorf("the stale workflow pod claimed the new runner's reservation (claimedBy %q)", r.ClaimedBy())
	}

	pending := workflowPod("r1").UID("stale-pending").CreationTimestamp(earlier).Obj()
	wcs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, wcs, pending, nil); status.IsSuccess() {
		if s, _ := getPreFilterState(wcs); s != nil && s.kind == kindWorkflow {
			t.Error("a workflow pod created before the runner pod was given the runner's reservation")
		}
	}
}

// Defect 1, after a restart: the rebuilt reservation of the new runner is
// not claimed by the failed incarnation's workflow pod either.
func TestRebuildIgnoresStaleWorkflowPod(t *testing.T) {
	runner := runnerPod("r1").UID("r1-new").CreationTimestamp(later).Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1-new")).Obj()
	stale := workflowPod("r1").UID("stale").CreationTimestamp(earlier).Node("n1").Obj()
	pl, _ := newTestPlugin(t, defaultArgs(), true, runner, stale)
	r, ok := pl.store.Get(key("r1"))
	if !ok {
		t.Fatal("reservation not rebuilt")
	}
	if r.ClaimedBy() != "" {
		t.Errorf("the rebuilt reservation is claimed by the stale workflow pod %q", r.ClaimedBy())
	}
}

// Defect 2: the bind went through but was reported as failed (a timeout);
// the informer showed the bound runner first. Unreserve must not drop the
// reservation of a runner that is bound.
func TestBindCommittedButReportedFailed(t *testing.T) {
	ctx := context.Background()
	logger, _ := ktesting.NewTestContext(t)
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	cs := reserveRunner(t, pl, runner, "n1")

	pl.onPod(logger, boundWithRecord(t, pl, runner, "n1"))
	pl.Unreserve(ctx, cs, runner, "n1")
	if r, ok := pl.store.Get(key("r1")); !ok || r.Node != "n1" {
		t.Fatalf("after Unreserve of a runner the informer shows bound: reservation %+v (found %v), want it kept on n1", r, ok)
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
	pl.onPod(logger, elsewhere)
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
	if s, _ := getPreFilterState(cs); s.kind != kindOther {
		t.Errorf("kind = %v, want an ordinary pod: it does not match the runner selector", s.kind)
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
			pl, _ := newTestPlugin(t, defaultArgs(), true, pod)
			if got := pl.store.List(); len(got) != 0 {
				t.Errorf("reservations = %+v, want none", got)
			}
		})
	}
}

// Defect 7: the scheduler's pod informer drops terminal pods, so a runner
// that finished reaches the handler as a delete: the release must still
// say it finished.
func TestTerminalRunnerDeliveredAsDelete(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	runner := runnerPod("r9").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r9")).Obj()
	args := defaultArgs()
	args.ReservationEvents = true // the release event says why
	pl, h := newTestPlugin(t, args, true, runner)
	finished := runner.DeepCopy()
	finished.Status.Phase = v1.PodSucceeded
	counter := metrics.Releases.WithLabelValues("test", metrics.ReleaseRunnerFinished, "false")
	before, _ := testutil.GetCounterMetricValue(counter)
	pl.onPodDelete(logger, finished)
	after, _ := testutil.GetCounterMetricValue(counter)
	if after-before != 1 {
		t.Errorf("releases_total{reason=runner_finished} grew by %v, want 1", after-before)
	}
	if got := strings.Join(drainEvents(h), "\n"); !strings.Contains(got, "finished") {
		t.Errorf("release event %q does not say the runner finished", got)
	}
}

// Defect 7: the workflow pod's bind reported failure after the informer
// had shown it bound and then finished; Unreserve must not bring the used-up
// reservation back.
func TestWorkflowUnreserveKeepsObservedClaim(t *testing.T) {
	ctx := context.Background()
	logger, _ := ktesting.NewTestContext(t)
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	pl.store.Take(oneUnitReservation("r1"))
	wf := workflowPod("r1").Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, wf, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	pl.Reserve(ctx, cs, wf, "n1")
	bound := wf.DeepCopy()
	bound.Spec.NodeName = "n1"
	pl.onPod(logger, bound)
	bound.Status.Phase = v1.PodSucceeded
	pl.onPodDelete(logger, bound)
	pl.Unreserve(ctx, cs, wf, "n1")
	if r, _ := pl.store.Get(key("r1")); !r.UsedUp() {
		t.Errorf("reservation %+v holds room again after Unreserve; its workflow pod already ran", r)
	}
}

// Defect 7: a reservation released because its node was deleted must not
// come back with the next update of the runner still bound to that node.
func TestNodeDeletionReleaseSticks(t *testing.T) {
	ctx := context.Background()
	logger, _ := ktesting.NewTestContext(t)
	runner := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	node := st.MakeNode().Name("n1").Obj()
	pl, h := newTestPlugin(t, defaultArgs(), true, runner, node)
	if err := h.client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted node's reservation is released", func() bool { return pl.store.Empty() })
	updated := runner.DeepCopy()
	updated.Labels["touched"] = "yes"
	pl.onPod(logger, updated)
	if !pl.store.Empty() {
		t.Errorf("reservation back after the runner's update: %+v", pl.store.List())
	}
}

// Defect 7: informers deliver existing pods in any order; with the workflow
// pod first, the rebuilt reservation is still claimed.
func TestRebuildWorkflowPodFirst(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	wf := workflowPod("r1").Node("n1").Obj()
	runner := runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	pl, h := newTestPlugin(t, defaultArgs(), false)
	pl.useListerOf(t, h, wf, runner)
	pl.onPod(logger, wf)
	pl.onPod(logger, runner)
	if r, ok := pl.store.Get(key("r1")); !ok || r.ClaimedBy() != wf.UID {
		t.Errorf("reservation %+v (found %v), want it claimed by %s", r, ok, wf.UID)
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
	pl, h := newTestReplica(t, args, leader, profile, true, runner)
	if _, err := h.client.CoreV1().Pods("arc").Create(ctx, workflowPod("r1").Node("n1").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the standby's store sees the claim", func() bool {
		r, _ := pl.store.Get(key("r1"))
		return r.ClaimedBy() != ""
	})
	if got := drainEvents(h); len(got) != 0 {
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
