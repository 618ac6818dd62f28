package workflowreservation

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

const preScoreStateKey = "PreScore" + Name

var (
	_ fwk.PreScorePlugin = &WorkflowReservation{}
	_ fwk.ScorePlugin    = &WorkflowReservation{}
)

// scoreState is what Score needs of the pod.
type scoreState struct {
	*preFilterState
	// need is what the pod brings to a node: its request, plus its
	// workflow pod's for a runner. Its cpu and memory count a container
	// that requests none as NodeResourcesFit does (nonZeroRequest).
	need reservations.Amount
}

// nonZeroRequest is the pod's request as NodeResourcesFit scores it: a
// container without a cpu or memory request counts as the scheduler's
// defaults (100m, 200Mi), so that best-effort pods rank nodes as they
// would without tandem.
func nonZeroRequest(pod *v1.Pod) reservations.Amount {
	a := reservations.AmountFromList(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		NonMissingContainerRequests: v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(schedutil.DefaultMilliCPURequest, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(schedutil.DefaultMemoryRequest, resource.DecimalSI),
		},
	}))
	a.Pods = 1
	return a
}

func (s *scoreState) Clone() fwk.StateData { return s }

// PreScore prepares Score; for a pod PreFilter skipped (no reservations
// anywhere) it only needs the pod's request.
func (pl *WorkflowReservation) PreScore(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	s, err := getPreFilterState(cs)
	if err != nil {
		s = &preFilterState{}
	}
	need := nonZeroRequest(pod)
	if s.kind == kindRunner {
		need = need.Add(s.workflow)
	}
	cs.Write(preScoreStateKey, &scoreState{preFilterState: s, need: need})
	return nil
}

// Score ranks nodes by allocation with reserved room counted as used, the
// way NodeResourcesFit ranks them without reservations (its formulas, and
// its non-zero cpu and memory of best-effort pods): LeastAllocated spreads,
// MostAllocated bin-packs. A runner is scored with its workflow pod. A
// workflow pod that is not pinned to a node prefers its runner's.
func (pl *WorkflowReservation) Score(_ context.Context, cs fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	c, err := cs.Read(preScoreStateKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreStateKey, err))
	}
	s, ok := c.(*scoreState)
	if !ok {
		return 0, fwk.AsStatus(fmt.Errorf("%+v convert to workflowreservation.scoreState error", c))
	}
	if s.kind == kindWorkflow && nodeInfo.Node().Name == s.own.Node {
		return fwk.MaxNodeScore, nil
	}
	used := s.need.Add(pl.reservedOn(s.preFilterState, nodeInfo).Amount)
	// NodeResourcesFit's accounting: cpu and memory with best-effort
	// containers at the defaults, every other resource as requested.
	alloc, requested, nonZero := nodeInfo.GetAllocatable(), nodeInfo.GetRequested(), nodeInfo.GetNonZeroRequested()

	var total, weights int64
	for _, r := range pl.scoring.Resources {
		var capacity, inUse int64
		switch name := v1.ResourceName(r.Name); name {
		case v1.ResourceCPU:
			capacity, inUse = alloc.GetMilliCPU(), nonZero.GetMilliCPU()+used.MilliCPU
		case v1.ResourceMemory:
			capacity, inUse = alloc.GetMemory(), nonZero.GetMemory()+used.Memory
		case v1.ResourceEphemeralStorage:
			capacity, inUse = alloc.GetEphemeralStorage(), requested.GetEphemeralStorage()+used.EphemeralStorage
		default:
			if s.need.Scalar[name] == 0 {
				continue // as NodeResourcesFit: a resource the pod does not ask for does not rank nodes
			}
			capacity, inUse = alloc.GetScalarResources()[name], requested.GetScalarResources()[name]+used.Scalar[name]
		}
		if capacity == 0 {
			continue // the node does not offer it: it does not rank nodes
		}
		inUse = max(inUse, 0)
		// NodeResourcesFit's leastRequestedScore and mostRequestedScore,
		// rounding included.
		var score int64
		if pl.scoring.Type == config.LeastAllocated {
			if inUse <= capacity {
				score = (capacity - inUse) * fwk.MaxNodeScore / capacity
			}
		} else {
			score = min(inUse, capacity) * fwk.MaxNodeScore / capacity
		}
		total += score * r.Weight
		weights += r.Weight
	}
	if weights == 0 {
		return 0, nil
	}
	return total / weights, nil
}

// ScoreExtensions returns nil: scores are already in [0, MaxNodeScore].
func (pl *WorkflowReservation) ScoreExtensions() fwk.ScoreExtensions { return nil }
