package reservations

import (
	"github.com/tandem-scheduler/tandem/pkg/contract"
)

// What a reservation still holds on a node depends on which of its runner's
// pods are there, in the node's accounting (the scheduler's snapshot, with
// the pods it assumed):
//
//   - before the workflow pod arrives: all of it, host ports included;
//   - once the workflow pod is there: the step headroom, less what the
//     workflow pod takes beyond the workflow part, less the requests of the
//     runner's step pods running there; its host ports are the pod's own;
//   - once the workflow pod is gone: nothing (a pod of the runner on
//     another node is not its workflow pod: it claims nothing);
//   - less, at any time, what the runner's placeholder (reservationMode:
//     Pods) requests on the node: that pod's requests are the node's
//     already (it holds no host ports: NodePorts would keep the workflow
//     pod off its own placeholder's node).
//
// So a hand-over has neither a gap nor a double count, whichever of the
// scheduler and the plugin's handler saw the pod first.

// RunnerPods is what one reservation's runner has on the node.
type RunnerPods struct {
	Workflow        bool
	WorkflowRequest Amount
	Steps           Amount
	// placeholder is what the runner's placeholder pods there request.
	Placeholder    Amount
	HasPlaceholder bool
}

// Held is what the reservations on a node hold against a pod.
type Held struct {
	Amount Amount
	Ports  []contract.HostPort
}

// Holds returns what r still holds, given its runner's pods on the node.
func (r *Reservation) Holds(on RunnerPods) (Amount, []contract.HostPort) {
	a, ports := r.holdsWithoutPlaceholder(on)
	if !on.HasPlaceholder {
		return a, ports
	}
	return a.Sub(on.Placeholder).AtLeastZero(), ports
}

func (r *Reservation) holdsWithoutPlaceholder(on RunnerPods) (Amount, []contract.HostPort) {
	switch {
	case r.done:
		return Amount{}, nil
	case !on.Workflow && r.claimedBy == "" && r.noWorkflowPod:
		return r.Step.Sub(on.Steps).AtLeastZero(), nil
	case !on.Workflow && r.claimedBy == "":
		return r.Size.Sub(on.Steps).AtLeastZero(), r.Ports
	case !on.Workflow:
		// Claimed (assumed by the scheduler, or seen by the handler) but
		// not in this snapshot yet: keep all of it, no gap.
		return r.Size, r.Ports
	}
	headroom := r.Size.Sub(on.WorkflowRequest).AtLeastZero().AtMost(r.Step)
	return headroom.Sub(on.Steps).AtLeastZero(), nil
}
