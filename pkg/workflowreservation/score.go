package workflowreservation

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

const preScoreStateKey = "PreScore" + Name

var (
	_ fwk.PreScorePlugin = &WorkflowReservation{}
	_ fwk.ScorePlugin    = &WorkflowReservation{}
)

// defaultScoring is used when the args carry no strategy (args built in
// code; decoded args are defaulted to the same).
var defaultScoring = config.ScoringStrategy{
	Type:      config.LeastAllocated,
	Resources: []config.ResourceSpec{{Name: string(v1.ResourceCPU), Weight: 1}, {Name: string(v1.ResourceMemory), Weight: 1}},
}

// scoreState is what Score needs of the pod.
type scoreState struct {
	*preFilterState
	// need is what the pod brings to a node: its request, plus its
	// workflow pod's for a runner.
	need reservations.Amount
}

func (s *scoreState) Clone() fwk.StateData { return s }

// PreScore prepares Score; for a pod PreFilter skipped (no reservations
// anywhere) it only needs the pod's request.
func (pl *WorkflowReservation) PreScore(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	s, err := getPreFilterState(cs)
	if err != nil {
		s = &preFilterState{request: reservations.PodAmount(pod)}
	}
	need := s.request
	if s.kind == kindRunner {
		need = need.Add(s.workflow)
	}
	cs.Write(preScoreStateKey, &scoreState{preFilterState: s, need: need})
	return nil
}

// Score ranks nodes by allocation with reserved room counted as used, the
// way NodeResourcesFit ranks them without reservations: LeastAllocated
// spreads, MostAllocated bin-packs. A runner is scored with its workflow
// pod. A workflow pod that is not pinned to a node prefers its runner's.
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
	used := s.need.Add(pl.held(s.preFilterState, nodeInfo).Amount)
	alloc, requested := nodeInfo.GetAllocatable(), nodeInfo.GetRequested()

	var total, weights int64
	for _, r := range pl.scoring.Resources {
		var capacity, inUse int64
		switch name := v1.ResourceName(r.Name); name {
		case v1.ResourceCPU:
			capacity, inUse = alloc.GetMilliCPU(), requested.GetMilliCPU()+used.MilliCPU
		case v1.ResourceMemory:
			capacity, inUse = alloc.GetMemory(), requested.GetMemory()+used.Memory
		case v1.ResourceEphemeralStorage:
			capacity, inUse = alloc.GetEphemeralStorage(), requested.GetEphemeralStorage()+used.EphemeralStorage
		default:
			capacity, inUse = alloc.GetScalarResources()[name], requested.GetScalarResources()[name]+used.Scalar[name]
		}
		if capacity == 0 {
			continue // the node does not offer it: it does not rank nodes
		}
		inUse = min(max(inUse, 0), capacity)
		score := inUse * fwk.MaxNodeScore / capacity
		if pl.scoring.Type == config.LeastAllocated {
			score = fwk.MaxNodeScore - score
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

// pinnedTo reports whether the pod is tied to node by its own spec: a
// hostname nodeSelector naming it, or a required node affinity every term of
// which names it on the hostname label (or by metadata.name). That is how
// the hooks pin a workflow pod to the runner's node (v0.7.0 with
// ACTIONS_RUNNER_USE_KUBE_SCHEDULER, the RWO mode of the next hook). Any
// other required affinity (an architecture, a pool) leaves the pod free to
// go elsewhere.
func pinnedTo(pod *v1.Pod, node string) bool {
	if v, ok := pod.Spec.NodeSelector[v1.LabelHostname]; ok {
		return v == node
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return false
	}
	for _, t := range terms {
		if !termNames(t, node) {
			return false
		}
	}
	return true
}

// termNames reports whether the node selector term allows node only.
func termNames(t v1.NodeSelectorTerm, node string) bool {
	only := func(r v1.NodeSelectorRequirement, key string) bool {
		return r.Key == key && r.Operator == v1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == node
	}
	for _, r := range t.MatchExpressions {
		if only(r, v1.LabelHostname) {
			return true
		}
	}
	for _, r := range t.MatchFields {
		if only(r, metav1.ObjectNameField) {
			return true
		}
	}
	return false
}
