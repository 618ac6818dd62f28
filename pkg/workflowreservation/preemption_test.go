package workflowreservation

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

func podInfo(t *testing.T, pod *v1.Pod) fwk.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

// What a preemption dry run and the nominated-pod check see: AddPod and
// RemovePod change the reservations counted in a copy of the cycle state.
func TestPreFilterExtensions(t *testing.T) {
	ctx := context.Background()
	runner1 := runnerPod("r1").Req(units("1")).Node("n1").Obj()
	claimedWorkflow := workflowPod("r2").Req(units("1")).Node("n1").Obj()
	claimed := claimedBy(oneUnitReservation("r2"), claimedWorkflow.UID)
	nominated := runnerPod("r3").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Req(units("1")).NominatedNodeName("n1").Obj()

	tests := map[string]struct {
		nodePods []*v1.Pod
		// withClaimed adds r2's reservation, claimed by claimedWorkflow.
		withClaimed bool
		// edit changes the cycle state (and the node's pods, as the
		// framework does) before Filter.
		edit     func(t *testing.T, pl *WorkflowReservation, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo)
		request  string
		wantFits bool
		// originalFits is Filter's verdict on the state the dry run copied.
		originalFits bool
	}{
		"held reservation is not free": {
			nodePods: []*v1.Pod{runner1},
			request:  "2",
		},
		"a victim runner takes its reservation along": {
			nodePods: []*v1.Pod{runner1},
			edit: func(t *testing.T, pl *WorkflowReservation, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) {
				if err := ni.RemovePod(klogger(t), runner1); err != nil {
					t.Fatal(err)
				}
				pl.RemovePod(ctx, cs, pod, podInfo(t, runner1), ni)
			},
			request:  "3",
			wantFits: true,
		},
		"a victim runner spared gets its reservation back": {
			nodePods: []*v1.Pod{runner1},
			edit: func(t *testing.T, pl *WorkflowReservation, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) {
				if err := ni.RemovePod(klogger(t), runner1); err != nil {
					t.Fatal(err)
				}
				pl.RemovePod(ctx, cs, pod, podInfo(t, runner1), ni)
				ni.AddPodInfo(podInfo(t, runner1))
				pl.AddPod(ctx, cs, pod, podInfo(t, runner1), ni)
			},
			request: "2",
		},
		"a victim workflow pod does not bring its reservation back": {
			nodePods:    []*v1.Pod{claimedWorkflow},
			withClaimed: true,
			edit: func(t *testing.T, pl *WorkflowReservation, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) {
				if err := ni.RemovePod(klogger(t), claimedWorkflow); err != nil {
					t.Fatal(err)
				}
				pl.RemovePod(ctx, cs, pod, podInfo(t, claimedWorkflow), ni)
			},
			// 3 - r1's reservation 1; r2's would take the rest again.
			request:  "2",
			wantFits: true,
		},
		"a nominated runner brings its workflow pod's room": {
			edit: func(t *testing.T, pl *WorkflowReservation, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) {
				ni.AddPodInfo(podInfo(t, nominated))
				pl.AddPod(ctx, cs, pod, podInfo(t, nominated), ni)
			},
			// 3 - runner 1 - its workflow pod 1 - r1's reservation 1.
			request:      "500m",
			originalFits: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			pl.store.Take(oneUnitReservation("r1"))
			if tc.withClaimed {
				pl.store.Take(claimed)
			}
			pod := st.MakePod().Namespace("arc").Name("p").UID("p").Priority(1000).Req(units(tc.request)).Obj()
			cs := framework.NewCycleState()
			if _, status := pl.PreFilter(ctx, cs, pod, nil); !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			ni := nodeInfo(threeUnits, tc.nodePods...)
			// As the framework does, the dry run works on copies.
			dry, dryNode := cs.Clone(), ni.Snapshot()
			if tc.edit != nil {
				tc.edit(t, pl, dry, pod, dryNode)
			}
			if got := pl.Filter(ctx, dry, pod, dryNode).IsSuccess(); got != tc.wantFits {
				t.Errorf("Filter fits = %v, want %v", got, tc.wantFits)
			}
			// The original state is untouched by the dry run.
			if got := pl.Filter(ctx, cs, pod, ni).IsSuccess(); got != tc.originalFits {
				t.Errorf("Filter on the original state fits = %v after a dry run on its copy, want %v", got, tc.originalFits)
			}
		})
	}
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
	if s, _ := getCycleState(cs); !s.adjust.isRemoved("r1") {
		t.Error("sparing the workflow pod brought back the reservation of the runner still removed")
	}
}
