package workflowreservation

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

func TestScore(t *testing.T) {
	cpuOnly := []config.ResourceSpec{{Name: "cpu", Weight: 1}}
	tenUnits := st.MakeNode().Name("n1").Capacity(units("10")).Obj()
	runner1 := runnerPod("r1").Req(units("2")).Node("n1").Obj()
	tests := map[string]struct {
		strategy     config.ScoringStrategyType
		pod          *v1.Pod
		nodePods     []*v1.Pod
		reservations []*reservations.Reservation
		want         int64
	}{
		"least allocated: reserved room counts as used": {
			strategy:     config.LeastAllocated,
			pod:          st.MakePod().Namespace("arc").Name("p").Req(units("1")).Obj(),
			nodePods:     []*v1.Pod{runner1},
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			want:         60, // 10 - 2 - 1 reserved - 1 = 6 free of 10
		},
		"most allocated: reserved room counts as used": {
			strategy:     config.MostAllocated,
			pod:          st.MakePod().Namespace("arc").Name("p").Req(units("1")).Obj(),
			nodePods:     []*v1.Pod{runner1},
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			want:         40,
		},
		"most allocated: a claimed reservation is counted once": {
			strategy:     config.MostAllocated,
			pod:          st.MakePod().Namespace("arc").Name("p").Req(units("1")).Obj(),
			nodePods:     []*v1.Pod{runner1, workflowPod("r1").Req(units("1")).Node("n1").Obj()},
			reservations: []*reservations.Reservation{claimedBy(oneUnitReservation("r1"), "r1-workflow")},
			want:         40,
		},
		"a runner is scored with its workflow pod": {
			strategy: config.MostAllocated,
			pod:      runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=3").Req(units("1")).Obj(),
			want:     40,
		},
		"an unpinned workflow pod prefers its runner's node": {
			strategy:     config.LeastAllocated,
			pod:          workflowPod("r1").Req(units("9")).Obj(),
			nodePods:     []*v1.Pod{runner1},
			reservations: []*reservations.Reservation{oneUnitReservation("r1")},
			want:         fwk.MaxNodeScore,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			args := defaultArgs()
			args.ScoringStrategy = &config.ScoringStrategy{Type: tc.strategy, Resources: cpuOnly}
			pl, _ := newTestPlugin(t, args, false)
			for _, r := range tc.reservations {
				pl.store.Take(r)
			}
			cs := framework.NewCycleState()
			if _, status := pl.PreFilter(ctx, cs, tc.pod, nil); !status.IsSuccess() && !status.IsSkip() {
				t.Fatalf("PreFilter: %v", status)
			}
			if status := pl.PreScore(ctx, cs, tc.pod, nil); !status.IsSuccess() {
				t.Fatalf("PreScore: %v", status)
			}
			got, status := pl.Score(ctx, cs, tc.pod, nodeInfo(tenUnits, tc.nodePods...))
			if !status.IsSuccess() {
				t.Fatalf("Score: %v", status)
			}
			if got != tc.want {
				t.Errorf("Score = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestScoreRanksLikeNodeResourcesFitWithoutReservations(t *testing.T) {
	ctx := context.Background()
	pl, _ := newTestPlugin(t, defaultArgs(), false) // LeastAllocated on cpu and memory
	pod := st.MakePod().Namespace("arc").Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj()
	node := st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: "4Gi"}).Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, pod, nil); !status.IsSkip() {
		t.Fatalf("PreFilter = %v, want Skip with no reservations", status)
	}
	pl.PreScore(ctx, cs, pod, nil)
	got, _ := pl.Score(ctx, cs, pod, nodeInfo(node))
	if got != 75 {
		t.Errorf("Score = %d, want 75 (3 of 4 cpu and memory free)", got)
	}
}

// Score ranks as the in-tree NodeResourcesFit (the plugin it stands in for
// in a tandem profile) ranks when nothing is reserved, best-effort pods
// included: NodeResourcesFit counts a container without a cpu or memory
// request as 100m / 200Mi (GetNonZeroRequested, and the same for the pod
// being scored), so a node full of best-effort pods is not the emptiest.
func TestScoreAgreesWithNodeResourcesFit(t *testing.T) {
	ctx := context.Background()
	capacity := map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "110"}
	var bestEffort []*v1.Pod
	for i := range 10 {
		bestEffort = append(bestEffort, st.MakePod().Namespace("ci").Name(fmt.Sprintf("be%d", i)).UID(fmt.Sprintf("be%d", i)).Container("app").Node("n1").Obj())
	}
	nodes := []fwk.NodeInfo{
		nodeInfo(st.MakeNode().Name("n1").Capacity(capacity).Obj(), bestEffort...),
		nodeInfo(st.MakeNode().Name("n2").Capacity(capacity).Obj(),
			st.MakePod().Namespace("ci").Name("small").UID("small").Node("n2").Req(map[v1.ResourceName]string{v1.ResourceCPU: "500m", v1.ResourceMemory: "512Mi"}).Obj()),
		nodeInfo(st.MakeNode().Name("n3").Capacity(capacity).Obj()),
	}
	pods := map[string]*v1.Pod{
		"a pod with requests": st.MakePod().Namespace("ci").Name("p").UID("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj(),
		"a best-effort pod":   st.MakePod().Namespace("ci").Name("q").UID("q").Container("app").Obj(),
		"cpu only":            st.MakePod().Namespace("ci").Name("c").UID("c").Req(map[v1.ResourceName]string{v1.ResourceCPU: "300m"}).Obj(),
	}
	for _, strategy := range []config.ScoringStrategyType{config.LeastAllocated, config.MostAllocated} {
		args := defaultArgs()
		args.ScoringStrategy = &config.ScoringStrategy{Type: strategy, Resources: defaultArgs().ScoringStrategy.Resources}
		pl, h := newTestPlugin(t, args, false)
		fit, err := noderesources.NewFit(ctx, &schedconfig.NodeResourcesFitArgs{ScoringStrategy: &schedconfig.ScoringStrategy{
			Type:      schedconfig.ScoringStrategyType(strategy),
			Resources: []schedconfig.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}},
		}}, h, feature.Features{})
		if err != nil {
			t.Fatal(err)
		}
		inTree := fit.(fwk.ScorePlugin)
		for name, pod := range pods {
			t.Run(string(strategy)+"/"+name, func(t *testing.T) {
				cs := framework.NewCycleState()
				pl.PreFilter(ctx, cs, pod, nodes)
				if status := pl.PreScore(ctx, cs, pod, nodes); !status.IsSuccess() {
					t.Fatal(status)
				}
				fitState := framework.NewCycleState()
				if status := fit.(fwk.PreScorePlugin).PreScore(ctx, fitState, pod, nodes); !status.IsSuccess() {
					t.Fatal(status)
				}
				for _, n := range nodes {
					got, status := pl.Score(ctx, cs, pod, n)
					if !status.IsSuccess() {
						t.Fatal(status)
					}
					want, status := inTree.Score(ctx, fitState, pod, n)
					if !status.IsSuccess() {
						t.Fatal(status)
					}
					if got != want {
						t.Errorf("node %s: tandem scores %d, NodeResourcesFit %d", n.Node().Name, got, want)
					}
				}
			})
		}
	}
}
