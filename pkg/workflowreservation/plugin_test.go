package workflowreservation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

var threeUnits = st.MakeNode().Name("n1").Capacity(units("3")).Obj()

func TestPreFilter(t *testing.T) {
	tests := map[string]struct {
		pod          *v1.Pod
		reservations []*reservations.Reservation
		wantCode     fwk.Code
		wantMsg      string
		wantKind     podKind
		wantNodes    sets.Set[string]
		wantWorkflow string
	}{
		"other pod, no reservations: skipped": {
			pod:      st.MakePod().Namespace("arc").Name("p").Obj(),
			wantCode: fwk.Skip,
		},
		"other pod with reservations held: filtered": {
			pod:          st.MakePod().Namespace("arc").Name("p").Obj(),
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			wantKind:     kindOther,
		},
		"runner sized by annotation": {
			pod:          runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj(),
			wantKind:     kindRunner,
			wantWorkflow: "cpu=1",
		},
		"runner whose only source is malformed: unresolvable with the reason": {
			pod:      runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=").Obj(),
			wantCode: fwk.UnschedulableAndUnresolvable,
			wantMsg:  "runner arc/r1: the size of its workflow pod is unknown",
		},
		"runner without any source: skipped, scheduled like any pod": {
			pod:      runnerPod("r1").Obj(),
			wantCode: fwk.Skip,
		},
		"pinned workflow pod narrowed to its runner's node": {
			pod:          workflowPod("r1").NodeAffinityIn(v1.LabelHostname, []string{"n1"}, st.NodeSelectorTypeMatchExpressions).Obj(),
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			wantKind:     kindWorkflow,
			wantNodes:    sets.New("n1"),
		},
		"unpinned workflow pod (novolume hook) is not narrowed": {
			pod:          workflowPod("r1").Obj(),
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			wantKind:     kindWorkflow,
		},
		"workflow pod whose runner holds nothing: ordinary pod": {
			pod:      workflowPod("r9").Obj(),
			wantCode: fwk.Skip,
		},
		"second workflow pod after the reservation was claimed: ordinary pod": {
			pod:          workflowPod("r1").UID("another").Obj(),
			reservations: []*reservations.Reservation{claimedBy(oneUnitReservation("r1"), "r1-workflow")},
			wantKind:     kindOther,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			for _, r := range tc.reservations {
				pl.store.Take(r)
			}
			cs := framework.NewCycleState()
			result, status := pl.PreFilter(context.Background(), cs, tc.pod, nil)
			if status.Code() != tc.wantCode {
				t.Fatalf("status = %v, want code %v", status, tc.wantCode)
			}
			if tc.wantMsg != "" && !strings.Contains(status.Message(), tc.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", status.Message(), tc.wantMsg)
			}
			if !status.IsSuccess() {
				return
			}
			s, err := getCycleState(cs)
			if err != nil {
				t.Fatal(err)
			}
			if s.kind != tc.wantKind {
				t.Errorf("kind = %v, want %v", s.kind, tc.wantKind)
			}
			if tc.wantWorkflow != "" && s.workflow.String() != tc.wantWorkflow {
				t.Errorf("workflow = %s, want %s", s.workflow, tc.wantWorkflow)
			}
			var gotNodes sets.Set[string]
			if result != nil {
				gotNodes = result.NodeNames
			}
			if diff := cmp.Diff(tc.wantNodes, gotNodes); diff != "" {
				t.Errorf("PreFilterResult nodes (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	claimed := claimedBy(oneUnitReservation("r1"), "r1-workflow")
	runner1 := runnerPod("r1").Req(units("1")).Node("n1").Obj()
	tests := map[string]struct {
		pod          *v1.Pod
		node         *v1.Node
		nodePods     []*v1.Pod
		reservations []*reservations.Reservation
		wantReason   string
	}{
		"runner: pair fits on an empty node": {
			pod: runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Req(units("1")).Obj(),
		},
		"runner: pair does not fit next to another pair": {
			pod:          runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Req(units("1")).Obj(),
			nodePods:     []*v1.Pod{runner1},
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			wantReason:   contract.ErrReasonPairDoesNotFit,
		},
		"runner: a claimed reservation and its workflow pod are counted once": {
			pod:          runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj(),
			nodePods:     []*v1.Pod{runner1, workflowPod("r1").Req(units("1")).Node("n1").Obj()},
			reservations: []*reservations.Reservation{claimed},
		},
		"runner: just over the room left": {
			pod:          runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Req(units("1m")).Obj(),
			nodePods:     []*v1.Pod{runner1, workflowPod("r1").Req(units("1")).Node("n1").Obj()},
			reservations: []*reservations.Reservation{claimed},
			wantReason:   contract.ErrReasonPairDoesNotFit,
		},
		"runner: pods limit counts the workflow pod": {
			pod: runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj(),
			nodePods: func() []*v1.Pod {
				var pods []*v1.Pod
				for i := 0; i < 31; i++ {
					pods = append(pods, st.MakePod().Namespace("x").Name(string(rune('a'+i))).Node("n1").Obj())
				}
				return pods
			}(),
			wantReason: contract.ErrReasonPairDoesNotFit,
		},
		"runner: an extended resource reserved by another runner is not free": {
			pod:  runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "nvidia.com/gpu=1").Obj(),
			node: st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "3", "nvidia.com/gpu": "1"}).Obj(),
			reservations: []*reservations.Reservation{{Runner: key("r1"), RunnerUID: "r1", Node: "n1",
				Size: contract.Amount{Pods: 1, Scalar: map[v1.ResourceName]int64{"nvidia.com/gpu": 1}}}},
			wantReason: contract.ErrReasonPairDoesNotFit,
		},
		"runner: an extended resource fits": {
			pod:  runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "nvidia.com/gpu=1").Obj(),
			node: st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "3", "nvidia.com/gpu": "1"}).Obj(),
		},
		"other pod: reserved room is not free": {
			pod:          st.MakePod().Namespace("arc").Name("p").Req(units("2")).Obj(),
			nodePods:     []*v1.Pod{runner1},
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			wantReason:   contract.ErrReasonRoomReserved,
		},
		"other pod: fits beside the reservation": {
			pod:          st.MakePod().Namespace("arc").Name("p").Req(units("1")).Obj(),
			nodePods:     []*v1.Pod{runner1},
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
		},
		"other pod: claimed reservation whose pod is on the node holds nothing more": {
			pod:          st.MakePod().Namespace("arc").Name("p").Req(units("1")).Obj(),
			nodePods:     []*v1.Pod{runner1, workflowPod("r1").Req(units("1")).Node("n1").Obj()},
			reservations: []*reservations.Reservation{claimed},
		},
		"other pod: claimed reservation whose pod is not yet on the node still holds": {
			pod:          st.MakePod().Namespace("arc").Name("p").Req(units("2")).Obj(),
			nodePods:     []*v1.Pod{runner1},
			reservations: []*reservations.Reservation{claimed},
			wantReason:   contract.ErrReasonRoomReserved,
		},
		"workflow pod: its own reservation is free for it": {
			pod:          workflowPod("r1").Req(units("2")).Obj(),
			nodePods:     []*v1.Pod{runner1},
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
		},
		"workflow pod: other reservations are not": {
			pod:          workflowPod("r1").Req(units("2")).Obj(),
			nodePods:     []*v1.Pod{runner1},
			reservations: []*reservations.Reservation{oneUnitReservation("r1"), oneUnitReservation("r2")},
			wantReason:   contract.ErrReasonWorkflowDoesNotFit,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			for _, r := range tc.reservations {
				pl.store.Take(r)
			}
			cs := framework.NewCycleState()
			if _, status := pl.PreFilter(context.Background(), cs, tc.pod, nil); !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			node := threeUnits
			if tc.node != nil {
				node = tc.node
			}
			status := pl.Filter(context.Background(), cs, tc.pod, nodeInfo(node, tc.nodePods...))
			if tc.wantReason == "" {
				if !status.IsSuccess() {
					t.Fatalf("Filter = %v, want success", status)
				}
				return
			}
			if status.Code() != fwk.Unschedulable {
				t.Fatalf("Filter = %v, want Unschedulable", status)
			}
			if diff := cmp.Diff([]string{tc.wantReason}, status.Reasons()); diff != "" {
				t.Errorf("reasons (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPostFilterMessage(t *testing.T) {
	tests := map[string]struct {
		pod          *v1.Pod
		reservations []*reservations.Reservation
		want         string
	}{
		"runner": {
			pod:  runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1,memory=1Gi").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "512Mi"}).Obj(),
			want: "runner arc/r1 needs cpu=1,memory=512Mi and its workflow pod cpu=1,memory=1Gi (from annotation); no node has room for both",
		},
		"workflow pod": {
			pod:          workflowPod("r1").Req(units("2")).Obj(),
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			want:         "workflow pod of runner arc/r1 needs cpu=2; its reservation on node n1 holds cpu=1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			for _, r := range tc.reservations {
				pl.store.Take(r)
			}
			cs := framework.NewCycleState()
			if _, status := pl.PreFilter(context.Background(), cs, tc.pod, nil); !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			_, status := pl.PostFilter(context.Background(), cs, tc.pod, nil)
			if status.Code() != fwk.Unschedulable || !strings.Contains(status.Message(), tc.want) {
				t.Errorf("PostFilter = %v, want Unschedulable containing %q", status, tc.want)
			}
		})
	}
}

func TestReserveUnreserve(t *testing.T) {
	ctx := context.Background()
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, runner, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if status := pl.Reserve(ctx, cs, runner, "n1"); !status.IsSuccess() {
		t.Fatalf("Reserve: %v", status)
	}
	r, ok := pl.store.Get(key("r1"))
	if !ok || r.Node != "n1" || r.Size.String() != "cpu=1" || r.Source != contract.SourceAnnotation {
		t.Fatalf("after Reserve got %+v (found %v), want cpu=1 on n1 from annotation", r, ok)
	}

	// The workflow pod claims and un-claims.
	wf := workflowPod("r1").Obj()
	wcs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, wcs, wf, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter workflow: %v", status)
	}
	pl.Reserve(ctx, wcs, wf, "n1")
	if r, _ := pl.store.Get(key("r1")); r.ClaimedBy() != wf.UID {
		t.Errorf("claimedBy = %q after the workflow pod's Reserve, want %q", r.ClaimedBy(), wf.UID)
	}
	pl.Unreserve(ctx, wcs, wf, "n1")
	if r, _ := pl.store.Get(key("r1")); r.ClaimedBy() != "" {
		t.Errorf("claimedBy = %q after the workflow pod's Unreserve, want empty", r.ClaimedBy())
	}

	// Unreserve is idempotent and leaves a same-named newer runner alone.
	pl.Unreserve(ctx, cs, runner, "n1")
	pl.Unreserve(ctx, cs, runner, "n1")
	if _, ok := pl.store.Get(key("r1")); ok {
		t.Fatal("reservation still held after Unreserve")
	}
	pl.store.Take(&reservations.Reservation{Runner: key("r1"), RunnerUID: "newer", Node: "n2"})
	pl.Unreserve(ctx, cs, runner, "n1")
	if _, ok := pl.store.Get(key("r1")); !ok {
		t.Error("Unreserve of an old runner removed the reservation of a newer pod with the same name")
	}
}

func TestBindRecordsReservation(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1,memory=1Gi").Obj()
	pl, h := newTestPlugin(t, defaultArgs(), false, runner)
	cs := framework.NewCycleState()
	pl.PreFilter(ctx, cs, runner, nil)
	if status := pl.Bind(ctx, cs, runner, "n1"); status.IsSuccess() || status.IsSkip() {
		t.Fatalf("Bind = %v without a reservation taken at Reserve, want an error", status)
	}
	pl.Reserve(ctx, cs, runner, "n1")
	if status := pl.Bind(ctx, cs, runner, "n1"); !status.IsSuccess() {
		t.Fatalf("Bind: %v", status)
	}
	var binding *v1.Binding
	for _, a := range h.client.Actions() {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetSubresource() == "binding" {
			binding = c.GetObject().(*v1.Binding)
		}
	}
	if binding == nil {
		t.Fatal("Bind made no binding request")
	}
	if binding.Target.Name != "n1" || binding.UID != runner.UID {
		t.Errorf("binding = %+v, want the runner bound to n1", binding)
	}
	got := runner.DeepCopy()
	got.Annotations = binding.Annotations
	got.Spec.NodeName = "n1"
	r, err := reservations.FromPod(got)
	if err != nil || r == nil {
		t.Fatalf("the binding carries no readable reservation: %v, %v", r, err)
	}
	if r.Node != "n1" || r.Size.String() != "cpu=1,memory=1Gi" || r.Size.Pods != 1 || r.Source != contract.SourceAnnotation {
		t.Errorf("recorded reservation = %+v, want cpu=1,memory=1Gi + 1 pod on n1 from annotation", r)
	}

	// Bound by this Bind: PostBind does not patch.
	h.client.ClearActions()
	pl.PostBind(ctx, cs, runner, "n1")
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("PostBind patched after this plugin's Bind: %v", a)
		}
	}

	other := st.MakePod().Namespace("arc").Name("p").Obj()
	ocs := framework.NewCycleState()
	pl.PreFilter(ctx, ocs, other, nil)
	if status := pl.Bind(ctx, ocs, other, "n1"); !status.IsSkip() {
		t.Errorf("Bind for a non-runner = %v, want Skip (DefaultBinder binds it)", status)
	}
}

// Another bind plugin bound the runner: its reservation is not recorded on
// the pod. PostBind says so (a Warning on the runner) and patches nothing:
// the shipped RBAC has no patch on pods.
func TestPostBindWarnsWhenAnotherBinderBound(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	pl, h := newTestPlugin(t, defaultArgs(), false, runner)
	cs := framework.NewCycleState()
	pl.PreFilter(ctx, cs, runner, nil)
	pl.Reserve(ctx, cs, runner, "n1")
	h.client.ClearActions()
	pl.PostBind(ctx, cs, runner, "n1") // DefaultBinder bound it
	for _, a := range h.client.Actions() {
		t.Errorf("PostBind made an API call: %v", a)
	}
	events := strings.Join(drainEvents(h), "\n")
	if !strings.Contains(events, "Warning "+contract.ReasonNotRecorded) || !strings.Contains(events, "bind extension point") {
		t.Errorf("events %q, want a Warning %s saying how to fix the profile", events, contract.ReasonNotRecorded)
	}
}

func TestReservationFromPod(t *testing.T) {
	tests := map[string]struct {
		pod     *v1.Pod
		wantNil bool
		wantErr string
	}{
		"no annotation":        {pod: runnerPod("r").Node("n1").Obj(), wantNil: true},
		"not bound":            {pod: runnerPod("r").Annotation(contract.ReservationAnnotation, `{"node":"n1"}`).Obj(), wantNil: true},
		"garbage":              {pod: runnerPod("r").Node("n1").Annotation(contract.ReservationAnnotation, `{`).Obj(), wantErr: "annotation tandem.dev/reservation"},
		"node mismatch":        {pod: runnerPod("r").Node("n2").Annotation(contract.ReservationAnnotation, `{"node":"n1","runnerUID":"r"}`).Obj(), wantErr: `names node "n1" but the pod is bound to "n2"`},
		"valid":                {pod: runnerPod("r").Node("n1").Annotation(contract.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"1","pods":"1"},"source":"default","runnerUID":"r"}`).Obj()},
		"another pod's record": {pod: runnerPod("r").Node("n1").Annotation(contract.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"1"},"runnerUID":"q"}`).Obj(), wantErr: `recorded for pod UID "q"`},
		"no requests":          {pod: runnerPod("r").Node("n1").Annotation(contract.ReservationAnnotation, `{"node":"n1","requests":{},"runnerUID":"r"}`).Obj(), wantErr: "holds no valid requests"},
		"negative requests":    {pod: runnerPod("r").Node("n1").Annotation(contract.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"-1"},"runnerUID":"r"}`).Obj(), wantErr: "holds no valid requests"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := reservations.FromPod(tc.pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (r == nil) != tc.wantNil {
				t.Fatalf("reservation = %+v, wantNil %v", r, tc.wantNil)
			}
			if r != nil && (r.Size.MilliCPU != 1000 || r.Size.Pods != 1 || r.Source != contract.SourceDefault) {
				t.Errorf("reservation = %+v", r)
			}
		})
	}
}

// PostBind reports a reservation taken or claimed with a Normal event only
// with reservationEvents; by default the runner's record is all there is.
func TestPostBindEvents(t *testing.T) {
	tests := map[string]struct {
		pod          *v1.Pod
		reservations []*reservations.Reservation
		want         string
	}{
		"runner: reserved": {
			pod:  runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj(),
			want: "Normal " + contract.ReasonReserved + " Reserved cpu=1 on node n1 for the workflow pod (size from annotation)",
		},
		"workflow pod: claimed": {
			pod:          workflowPod("r1").Obj(),
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			want:         "Normal " + contract.ReasonClaimed + " Claimed the reservation of runner r1 on node n1",
		},
	}
	for name, tc := range tests {
		for _, events := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, reservationEvents %v", name, events), func(t *testing.T) {
				ctx := context.Background()
				args := defaultArgs()
				args.ReservationEvents = events
				pl, h := newTestPlugin(t, args, false)
				for _, r := range tc.reservations {
					pl.store.Take(r)
				}
				cs := framework.NewCycleState()
				if _, status := pl.PreFilter(ctx, cs, tc.pod, nil); !status.IsSuccess() {
					t.Fatalf("PreFilter: %v", status)
				}
				if status := pl.Reserve(ctx, cs, tc.pod, "n1"); !status.IsSuccess() {
					t.Fatalf("Reserve: %v", status)
				}
				s, err := getCycleState(cs)
				if err != nil {
					t.Fatal(err)
				}
				s.recorded = true // as this plugin's Bind leaves it
				pl.PostBind(ctx, cs, tc.pod, "n1")
				var want []string
				if events {
					want = []string{tc.want}
				}
				if diff := cmp.Diff(want, drainEvents(h)); diff != "" {
					t.Errorf("events (-want,+got):\n%s", diff)
				}
			})
		}
	}
}

func TestEventsToRegister(t *testing.T) {
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	got, err := pl.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var events []fwk.ClusterEvent
	for _, e := range got {
		if e.QueueingHintFn == nil {
			t.Errorf("event %v has no QueueingHint", e.Event)
		}
		events = append(events, e.Event)
	}
	want := []fwk.ClusterEvent{
		{Resource: fwk.Pod, ActionType: fwk.Add},
		{Resource: fwk.Pod, ActionType: fwk.Delete},
		{Resource: fwk.Pod, ActionType: fwk.Update},
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want,+got):\n%s", diff)
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

	feederOf(pl).OnPod(logger, boundWithRecord(t, pl, runner, "n1"))
	pl.Unreserve(ctx, cs, runner, "n1")
	if r, ok := pl.store.Get(key("r1")); !ok || r.Node != "n1" {
		t.Fatalf("after Unreserve of a runner the informer shows bound: reservation %+v (found %v), want it kept on n1", r, ok)
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
	feederOf(pl).OnPod(logger, bound)
	bound.Status.Phase = v1.PodSucceeded
	feederOf(pl).OnPodDelete(logger, bound)
	pl.Unreserve(ctx, cs, wf, "n1")
	if r, _ := pl.store.Get(key("r1")); !r.UsedUp() {
		t.Errorf("reservation %+v holds room again after Unreserve; its workflow pod already ran", r)
	}
}

// A bind reported a failure but went through; the runner, requeued before
// the queue saw it bound, is scheduled again: that cycle's Reserve must not
// replace the bound reservation, nor its Unreserve drop it.
func TestReserveKeepsBoundReservation(t *testing.T) {
	ctx := context.Background()
	logger := klogger(t)
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	pending := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	useListerOf(t, pl)
	reserveRunner(t, pl, pending, "n1")
	feederOf(pl).OnPod(logger, boundWithRecord(t, pl, pending, "n1"))

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

// verdictOf is a Classifier that answers every pod with v: the plugin's
// side of the seam, without the controllers behind it.
type verdictOf struct {
	controllers.Classifier
	v controllers.Verdict
}

func (c verdictOf) Classify(context.Context, *v1.Pod) controllers.Verdict { return c.v }

// PreFilter turns what the Classifier says into the cycle's status and
// state, whatever the controllers behind it are.
func TestPreFilterTakesTheClassifiersVerdict(t *testing.T) {
	held := oneUnitReservation("r1")
	tests := map[string]struct {
		v         controllers.Verdict
		wantCode  fwk.Code
		wantMsg   string
		wantKind  podKind
		wantNodes sets.Set[string]
	}{
		"rebuild failed: an error": {
			v: controllers.Verdict{Err: errors.New("not rebuilt")}, wantCode: fwk.Error, wantMsg: "not rebuilt",
		},
		"must wait: unschedulable, retried": {
			v: controllers.Verdict{Wait: "runner arc/r1 waits"}, wantCode: fwk.Unschedulable, wantMsg: "runner arc/r1 waits",
		},
		"must wait for a change of its own: unresolvable": {
			v:        controllers.Verdict{Wait: "size unknown", Unresolvable: true},
			wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "size unknown",
		},
		"a runner: its pair is checked": {
			v:        controllers.Verdict{Kind: controllers.Runner, Workflow: reservations.PodAmount(st.MakePod().Req(units("1")).Obj())},
			wantKind: kindRunner,
		},
		"a pinned workflow pod: narrowed to its node": {
			v:        controllers.Verdict{Kind: controllers.Workflow, Runner: held.Runner, Reservation: *held, PinnedTo: "n1"},
			wantKind: kindWorkflow, wantNodes: sets.New("n1"),
		},
		"an unpinned workflow pod: every node": {
			v:        controllers.Verdict{Kind: controllers.Workflow, Runner: held.Runner, Reservation: *held},
			wantKind: kindWorkflow,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			pl.store.Take(oneUnitReservation("r0")) // no skipping: something is held
			pl.pods = verdictOf{Classifier: pl.pods, v: tc.v}
			cs := framework.NewCycleState()
			result, status := pl.PreFilter(context.Background(), cs, st.MakePod().Namespace("arc").Name("p").UID("p").Obj(), nil)
			if status.Code() != tc.wantCode || !strings.Contains(status.Message(), tc.wantMsg) {
				t.Fatalf("status = %v %q, want %v containing %q", status.Code(), status.Message(), tc.wantCode, tc.wantMsg)
			}
			if tc.wantCode != fwk.Success {
				if _, err := getCycleState(cs); err == nil {
					t.Error("a pod turned away left a cycle state")
				}
				return
			}
			var nodes sets.Set[string]
			if result != nil {
				nodes = result.NodeNames
			}
			if !nodes.Equal(tc.wantNodes) {
				t.Errorf("nodes = %v, want %v", sets.List(nodes), sets.List(tc.wantNodes))
			}
			s, err := getCycleState(cs)
			if err != nil {
				t.Fatal(err)
			}
			if s.kind != tc.wantKind || s.runner != tc.v.Runner || !s.workflow.Equal(tc.v.Workflow) {
				t.Errorf("state kind %v runner %v workflow %v, want %v %v %v", s.kind, s.runner, s.workflow, tc.wantKind, tc.v.Runner, tc.v.Workflow)
			}
		})
	}
}

// recordingHolder is a Holder that records the verbs the extension points
// call, in order, and does what the controllers' does.
type recordingHolder struct {
	controllers.Holder
	calls []string
}

func (h *recordingHolder) Take(ctx context.Context, runner *v1.Pod, r *reservations.Reservation) {
	h.calls = append(h.calls, fmt.Sprintf("Take %s on %s size %s", r.Runner.Name, r.Node, r.Size))
	h.Holder.Take(ctx, runner, r)
}

func (h *recordingHolder) Return(r *reservations.Reservation) bool {
	h.calls = append(h.calls, "Return "+r.Runner.Name)
	return h.Holder.Return(r)
}

func (h *recordingHolder) Claim(runner k8stypes.NamespacedName, runnerUID, pod k8stypes.UID, node string) (bool, bool) {
	h.calls = append(h.calls, fmt.Sprintf("Claim %s by %s on %s", runner.Name, pod, node))
	return h.Holder.Claim(runner, runnerUID, pod, node)
}

func (h *recordingHolder) Unclaim(runner k8stypes.NamespacedName, runnerUID, pod k8stypes.UID, wasUsedUp bool) {
	h.calls = append(h.calls, fmt.Sprintf("Unclaim %s by %s", runner.Name, pod))
	h.Holder.Unclaim(runner, runnerUID, pod, wasUsedUp)
}

func (h *recordingHolder) Claimed(r reservations.Reservation) {
	h.calls = append(h.calls, "Claimed "+r.Runner.Name)
	h.Holder.Claimed(r)
}

// The extension points hold room through the Holder, each verb once, in
// the framework's order: a runner's Reserve takes, its Unreserve returns
// what it took; a workflow pod's Reserve claims, its Unreserve unclaims, its
// PostBind reports the claim; a pod scheduled elsewhere than its reservation
// claims nothing more.
func TestExtensionPointsHoldRoomThroughTheHolder(t *testing.T) {
	ctx := context.Background()
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	h := &recordingHolder{Holder: pl.room}
	pl.room = h
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, runner, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if status := pl.Reserve(ctx, cs, runner, "n1"); !status.IsSuccess() {
		t.Fatalf("Reserve: %v", status)
	}
	wf := workflowPod("r1").Obj()
	// A failed cycle on the reserved node, one on another node, a bound one
	// on the reserved node.
	for i, node := range []string{"n1", "n2", "n1"} {
		wcs := framework.NewCycleState()
		if _, status := pl.PreFilter(ctx, wcs, wf, nil); !status.IsSuccess() {
			t.Fatalf("PreFilter workflow: %v", status)
		}
		pl.Reserve(ctx, wcs, wf, node)
		if i == 0 {
			pl.Unreserve(ctx, wcs, wf, node)
			continue
		}
		pl.PostBind(ctx, wcs, wf, node)
	}
	pl.Unreserve(ctx, cs, runner, "n1")
	want := []string{
		"Take r1 on n1 size cpu=1",
		"Claim r1 by r1-workflow on n1", "Unclaim r1 by r1-workflow",
		"Claim r1 by r1-workflow on n2",
		"Claim r1 by r1-workflow on n1", "Claimed r1",
		"Return r1",
	}
	if diff := cmp.Diff(want, h.calls); diff != "" {
		t.Errorf("the Holder's verbs (-want,+got):\n%s", diff)
	}
}
