package workflowreservation

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

var redis = contract.HostPort{Protocol: v1.ProtocolTCP, Port: 6379}

// withStep is r1's reservation of 3 cpu: 2 for the workflow pod, 1 of
// headroom for step pods (and a pod each), holding port 6379.
func withStep() *reservations.Reservation {
	return &reservations.Reservation{
		Runner: key("r1"), RunnerUID: "r1", Node: "n1", Source: contract.SourceAnnotation,
		Size:  contract.Amount{MilliCPU: 3000, Pods: 2},
		Step:  contract.Amount{MilliCPU: 1000, Pods: 1},
		Ports: []contract.HostPort{redis},
	}
}

// stepJob is a container-step Job of hooks v0.7.0: the Job carries the
// runner-pod label, its pod only the Job's ownership.
var stepJob = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "r1-step-0a1b2c3d", UID: "job-uid",
	Labels: map[string]string{"runner-pod": "r1"}}}

func jobStepPod(cpu string) *v1.Pod {
	pod := st.MakePod().Namespace("arc").Name("r1-step-0a1b2c3d-x").UID("job-pod").Req(units(cpu)).Node("n1").Obj()
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: stepJob.Name, UID: stepJob.UID, Controller: ptr.To(true)}}
	return pod
}

func TestWhatAReservationHolds(t *testing.T) {
	wf := func(cpu string) *v1.Pod { return workflowPod("r1").Req(units(cpu)).Node("n1").Obj() }
	stepPod := func(cpu string) *v1.Pod {
		return st.MakePod().Namespace("arc").Name("r1-step").UID("step").Label("runner-pod", "r1").Req(units(cpu)).Node("n1").Obj()
	}
	tests := map[string]struct {
		claimedBy string
		done      bool
		pods      []*v1.Pod
		wantCPU   int64
		wantPods  int64
		wantPorts []contract.HostPort
	}{
		"before the workflow pod: all of it, ports too": {wantCPU: 3000, wantPods: 2, wantPorts: []contract.HostPort{redis}},
		"workflow pod arrived: the step headroom":       {pods: []*v1.Pod{wf("2")}, wantCPU: 1000, wantPods: 1},
		"claimed by the scheduler, in the snapshot":     {claimedBy: "r1-workflow", pods: []*v1.Pod{wf("2")}, wantCPU: 1000, wantPods: 1},
		"claimed, not in this snapshot yet: no gap":     {claimedBy: "r1-workflow", wantCPU: 3000, wantPods: 2, wantPorts: []contract.HostPort{redis}},
		"a larger workflow pod eats into the headroom":  {pods: []*v1.Pod{wf("2500m")}, wantCPU: 500, wantPods: 1},
		"a smaller workflow pod leaves the headroom":    {pods: []*v1.Pod{wf("1")}, wantCPU: 1000, wantPods: 1},
		"a step pod (hooks v0.8) uses the headroom":     {claimedBy: "r1-workflow", pods: []*v1.Pod{wf("2"), stepPod("750m")}, wantCPU: 250},
		"a step Job's pod (hooks v0.7.0) uses it too":   {claimedBy: "r1-workflow", pods: []*v1.Pod{wf("2"), jobStepPod("1")}},
		"workflow pod gone: nothing":                    {claimedBy: "r1-workflow", done: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pl, _ := newTestPlugin(t, defaultArgs(), true, stepJob)
			r := withStep()
			switch {
			case tc.done:
				r = usedUpBy(r, k8stypes.UID(tc.claimedBy))
			case tc.claimedBy != "":
				r = claimedBy(r, k8stypes.UID(tc.claimedBy))
			}
			on := pl.runnerPodsOn(nil, []reservations.Facts{r.Facts()}, nodeInfo(threeUnits, tc.pods...), make([]contract.RunnerPods, 1))
			got, ports := r.Holds(on[0])
			if got.MilliCPU != tc.wantCPU || got.Pods != tc.wantPods {
				t.Errorf("holds cpu=%dm pods=%d, want cpu=%dm pods=%d", got.MilliCPU, got.Pods, tc.wantCPU, tc.wantPods)
			}
			if diff := cmp.Diff(tc.wantPorts, ports); diff != "" {
				t.Errorf("held ports (-want,+got):\n%s", diff)
			}
		})
	}
}

// A node is scanned again when its pods change, and what the scan read from
// a pod is reused only while the node shows the same object at the same
// place: a pod updated (a new object) is read again, and another profile's
// scan, whose runnerPodLabel may differ, is not used.
func TestRunnerPodsOnRereadsChangedPods(t *testing.T) {
	node := st.MakeNode().Name("n1").Capacity(units("8")).Obj()
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	r := withStep()
	pl.store.Take(r)
	var n *reservations.NodeReservations
	pl.store.WithNode("n1", func(nr *reservations.NodeReservations) { n = nr })
	fs := n.Facts()
	scan := func(pl *WorkflowReservation, pods ...*v1.Pod) contract.RunnerPods {
		t.Helper()
		return pl.runnerPodsOn(n, fs, nodeInfo(node, pods...), make([]contract.RunnerPods, 1))[0]
	}

	other := st.MakePod().Namespace("arc").Name("other").UID("other").Req(units("1")).Node("n1").Obj()
	wf := workflowPod("r1").Req(units("2")).Node("n1").Obj()
	if got := scan(pl, other, wf); !got.Workflow || got.WorkflowRequest.MilliCPU != 2000 {
		t.Fatalf("first scan: %+v, want the 2-cpu workflow pod", got)
	}
	// The same objects again: the same answer, from the kept scan.
	if got := scan(pl, other, wf); !got.Workflow || got.WorkflowRequest.MilliCPU != 2000 {
		t.Fatalf("second scan: %+v, want the 2-cpu workflow pod", got)
	}
	// The workflow pod updated in place on the node: relabelled and
	// resized. A new object: read again.
	relabelled := wf.DeepCopy()
	relabelled.Labels = map[string]string{"runner-pod": "r2"}
	if got := scan(pl, other, relabelled); got.Workflow || !got.Steps.IsZero() {
		t.Errorf("after the pod was relabelled: %+v, want nothing of r1's", got)
	}
	resized := wf.DeepCopy()
	resized.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("3")
	if got := scan(pl, other, resized); !got.Workflow || got.WorkflowRequest.MilliCPU != 3000 {
		t.Errorf("after the pod was resized: %+v, want the 3-cpu workflow pod", got)
	}

	// A profile that labels workflow pods otherwise does not take the
	// first profile's reading of the same objects.
	args := defaultArgs()
	args.RunnerPodLabel = "other-label"
	pl2, _ := newTestPlugin(t, args, false)
	if got := scan(pl2, other, resized); got.Workflow || !got.Steps.IsZero() {
		t.Errorf("profile with runnerPodLabel other-label: %+v, want nothing (the pod carries runner-pod)", got)
	}
	if got := scan(pl, other, resized); !got.Workflow || got.WorkflowRequest.MilliCPU != 3000 {
		t.Errorf("first profile again: %+v, want the 3-cpu workflow pod", got)
	}
}

// Step pods and host ports through Filter.
func TestFilterStepsAndPorts(t *testing.T) {
	claimed := func() *reservations.Reservation { return claimedBy(withStep(), "r1-workflow") }
	workflow := workflowPod("r1").Req(units("2")).Node("n1").Obj()
	fourUnits := st.MakeNode().Name("n1").Capacity(units("4")).Obj()
	tests := map[string]struct {
		pod        *v1.Pod
		res        *reservations.Reservation
		nodePods   []*v1.Pod
		wantKind   podKind
		wantReason string
	}{
		"another pod cannot take the step headroom": {
			pod: st.MakePod().Namespace("arc").Name("p").Req(units("2")).Obj(), res: claimed(),
			nodePods: []*v1.Pod{workflow}, wantKind: kindOther, wantReason: contract.ErrReasonRoomReserved,
		},
		"a step pod (hooks v0.8, labelled) may": {
			pod: st.MakePod().Namespace("arc").Name("s").UID("s").Label("runner-pod", "r1").Req(units("2")).Obj(), res: claimed(),
			nodePods: []*v1.Pod{workflow}, wantKind: kindStep,
		},
		"a step Job's pod (hooks v0.7.0) may": {
			pod: func() *v1.Pod { p := jobStepPod("2"); p.Spec.NodeName = ""; return p }(), res: claimed(),
			nodePods: []*v1.Pod{workflow}, wantKind: kindStep,
		},
		"a second labelled pod without headroom is an ordinary pod": {
			pod:      st.MakePod().Namespace("arc").Name("s").UID("s").Label("runner-pod", "r1").Req(units("2")).Obj(),
			res:      claimedBy(oneUnitReservation("r1"), "r1-workflow"),
			nodePods: []*v1.Pod{workflowPod("r1").Req(units("3")).Node("n1").Obj()}, wantKind: kindOther, wantReason: "",
		},
		"a pod asking for a held host port": {
			pod: st.MakePod().Namespace("arc").Name("p").ContainerPort([]v1.ContainerPort{{ContainerPort: 6379, HostPort: 6379}}).Obj(), res: withStep(),
			wantKind: kindOther, wantReason: contract.ErrReasonPortReserved,
		},
		"a runner whose ports another reservation holds": {
			pod: runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=100m").Annotation(contract.HostPortsAnnotation, "6379").Obj(), res: withStep(),
			wantKind: kindRunner, wantReason: contract.ErrReasonPortsTaken,
		},
		"a runner whose ports a running pod uses": {
			pod:      runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=100m").Annotation(contract.HostPortsAnnotation, "6379").Obj(),
			nodePods: []*v1.Pod{st.MakePod().Namespace("x").Name("redis").ContainerPort([]v1.ContainerPort{{ContainerPort: 6379, HostPort: 6379}}).Node("n1").Obj()},
			wantKind: kindRunner, wantReason: contract.ErrReasonPortsTaken,
		},
		"a runner with other ports": {
			pod: runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=100m").Annotation(contract.HostPortsAnnotation, "5432").Obj(), res: withStep(),
			wantKind: kindRunner,
		},
		"the workflow pod itself uses its held port": {
			pod: workflowPod("r1").Req(units("2")).ContainerPort([]v1.ContainerPort{{ContainerPort: 6379, HostPort: 6379}}).Obj(), res: withStep(),
			wantKind: kindWorkflow,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			pl, _ := newTestPlugin(t, defaultArgs(), true, stepJob)
			if tc.res != nil {
				pl.store.Take(tc.res)
			}
			cs := framework.NewCycleState()
			if _, status := pl.PreFilter(ctx, cs, tc.pod, nil); !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			s, err := getCycleState(cs)
			if err != nil {
				t.Fatal(err)
			}
			if s.kind != tc.wantKind {
				t.Errorf("kind = %v, want %v", s.kind, tc.wantKind)
			}
			status := pl.Filter(ctx, cs, tc.pod, nodeInfo(fourUnits, tc.nodePods...))
			var got []string
			if !status.IsSuccess() {
				got = status.Reasons()
			}
			var want []string
			if tc.wantReason != "" {
				want = []string{tc.wantReason}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Filter reasons (-want,+got):\n%s", diff)
			}
		})
	}
}

// What a node's reservations hold is cached: the cache must follow the
// store and the node's pods, and never serve what it did not compute for
// any pod (a workflow pod's own reservation, a dry run).
func TestHeldCache(t *testing.T) {
	ctx := context.Background()
	other := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj()
	state := func(pl *WorkflowReservation, pod *v1.Pod) *cycleState {
		cs := framework.NewCycleState()
		pl.PreFilter(ctx, cs, pod, nil)
		s, err := getCycleState(cs)
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
	dry := s.Clone().(*cycleState)
	dry.adjust.removed = addUID(dry.adjust.removed, "r1")
	if got := pl.reservedOn(dry, ni).Amount.MilliCPU; got != 1000 {
		t.Errorf("dry run without r1 sees %dm, want 1000m", got)
	}
	if got := pl.reservedOn(s, ni).Amount.MilliCPU; got != 2000 {
		t.Errorf("after the dry run an ordinary pod sees %dm, want 2000m", got)
	}
}
