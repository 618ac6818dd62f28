package contract

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The hold rule: what a runner's reservation still takes from its node,
// given which of the runner's pods are there in the node's accounting (the
// scheduler's snapshot, with the pods it assumed; or the API, for the
// simulator's invariant checker and kubectl-tandem):
//
//   - before the workflow pod arrives: all of it less what the runner's
//     step pods there already use, host ports included;
//   - claimed (tandem scheduled the workflow pod there, or saw it bound
//     there) but not in the node's accounting yet: all of it, no gap;
//   - once the workflow pod is there: the step headroom, less what the
//     workflow pod takes beyond the workflow part, less the requests of the
//     runner's step pods running there; its host ports are the pod's own;
//   - a job without a container (no workflow pod will come): the step
//     headroom less the step pods there;
//   - once the runner or its workflow pod ended: nothing;
//   - less, at any time, what the runner's placeholder (reservationMode:
//     Pods) requests on the node: that pod's requests are the node's
//     already (it holds no host ports: NodePorts would keep the workflow
//     pod off its own placeholder's node).
//
// Only pods of the runner's incarnation count (OfIncarnation); a pod of the
// runner on another node is not its workflow pod: it claims nothing. So a
// hand-over has neither a gap nor a double count, whichever of the
// scheduler and tandem's handler saw the pod first. The table of cases
// every reader runs is holdruletest.

// Holding is what the hold rule reads of one reservation.
type Holding struct {
	// Size is the room reserved: the workflow pod's request, step headroom
	// included.
	Size Amount
	// Step is the step headroom within Size.
	Step Amount
	// Ended: the runner or its workflow pod ended; nothing is held.
	Ended bool
	// Claimed: the workflow pod claimed the reservation, which the node's
	// accounting may not show yet.
	Claimed bool
	// NoWorkflowPod: the job runs without a container; only the step
	// headroom is held.
	NoWorkflowPod bool
}

// RunnerPods is what one reservation's runner has on the node.
type RunnerPods struct {
	// Workflow: the runner's workflow pod is on the node, requesting
	// WorkflowRequest (one pod included).
	Workflow        bool
	WorkflowRequest Amount
	// Steps is what the runner's step pods on the node request.
	Steps Amount
	// Placeholder is what the runner's placeholder pods there request.
	Placeholder    Amount
	HasPlaceholder bool
}

// Holds returns what the reservation holds on its node, given its runner's
// pods there, and whether it holds its host ports too.
func (h *Holding) Holds(on RunnerPods) (held Amount, ports bool) {
	held, ports = h.holdsWithoutPlaceholder(on)
	if on.HasPlaceholder {
		held = held.Sub(on.Placeholder).AtLeastZero()
	}
	return held, ports
}

func (h *Holding) holdsWithoutPlaceholder(on RunnerPods) (Amount, bool) {
	switch {
	case h.Ended:
		return Amount{}, false
	case !on.Workflow && !h.Claimed && h.NoWorkflowPod:
		return h.Step.Sub(on.Steps).AtLeastZero(), false
	case !on.Workflow && !h.Claimed:
		return h.Size.Sub(on.Steps).AtLeastZero(), true
	case !on.Workflow:
		return h.Size, true
	}
	headroom := h.Size.Sub(on.WorkflowRequest).AtLeastZero().AtMost(h.Step)
	return headroom.Sub(on.Steps).AtLeastZero(), false
}

// OfIncarnation reports whether pod, which names a runner in its runner-pod
// label, belongs to the runner pod created at runnerCreated: created no
// earlier than it, and not one of the pods an earlier runner of the name
// left (stale, recorded with the reservation).
func OfIncarnation(pod *v1.Pod, runnerCreated time.Time, stale []types.UID) bool {
	return !pod.CreationTimestamp.Time.Before(runnerCreated) && !slices.Contains(stale, pod.UID)
}

// IsTerminal reports whether the pod ran to its end (Succeeded or Failed):
// a workflow or step pod that did holds and claims nothing.
func IsTerminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}
