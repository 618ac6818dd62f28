package kubectltandem

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

// Phase is where a reservation is in its life, as tandem's metrics name it.
type Phase string

const (
	// PhaseHeld is a reservation whose workflow pod is not on the node
	// yet: all of the room is held.
	PhaseHeld Phase = "held"
	// PhaseClaimed is a reservation whose workflow pod is on the node: only
	// step headroom is still held.
	PhaseClaimed Phase = "claimed"
	// PhaseFinished is a reservation whose workflow pod is gone (finished):
	// nothing is held.
	PhaseFinished Phase = "finished"
	// PhaseInvalid is a record that may not hold room (Reservation.Invalid
	// says why): tandem ignores it.
	PhaseInvalid Phase = "invalid"
)

// Reservation is one runner's reservation and what it holds now.
type Reservation struct {
	Namespace string `json:"namespace"`
	Runner    string `json:"runner"`
	// RunnerUID is the runner the reservation was taken for.
	RunnerUID types.UID `json:"runnerUID"`
	Node      string    `json:"node"`
	// Requests is the size: the room held before the workflow pod arrives.
	Requests v1.ResourceList `json:"requests"`
	// StepRequests is the step headroom within Requests.
	StepRequests v1.ResourceList `json:"stepRequests,omitempty"`
	HostPorts    []string        `json:"hostPorts,omitempty"`
	// Source is where the size came from (annotation, hook-template,
	// default).
	Source string `json:"source"`
	Phase  Phase  `json:"phase"`
	// Holds is what the reservation holds on Node now.
	Holds v1.ResourceList `json:"holds"`
	// HeldPorts are the host ports it holds now.
	HeldPorts []string `json:"heldPorts,omitempty"`
	// StaleWorkflowPods are workflow pods of an earlier runner of the same
	// name, which never claim the reservation.
	StaleWorkflowPods []types.UID `json:"staleWorkflowPods,omitempty"`
	// WorkflowPod is the runner's workflow pod, once there is one.
	WorkflowPod string `json:"workflowPod,omitempty"`
	// Since is when the runner was bound (when the reservation was taken).
	Since time.Time `json:"since"`
	// Invalid says why the record holds nothing (PhaseInvalid).
	Invalid string `json:"invalid,omitempty"`
	// Resized is set on an invalid record of a bound runner of a tandem
	// profile: tandem holds no room for it either, and tells it so (event
	// WorkflowReservationNotRecorded). (Before issue 20 tandem's reconciler
	// sized such a runner again; the field keeps its name.)
	Resized bool `json:"resized,omitempty"`
	// Holders are pods that hold the room on the node themselves: their
	// requests count as reserved, not as requested. No source sets it
	// today: the placeholders of reservationMode Pods are left out of a
	// node's requested room by what they are (contract.IsPlaceholder, in
	// NodeUsage).
	Holders []types.UID `json:"holders,omitempty"`
}

// key is the runner's namespace/name.
func (r *Reservation) key() string { return r.Namespace + "/" + r.Runner }

// A Source finds the reservations of a snapshot, one per runner, with what
// each holds now. tandem records each reservation on its runner pod
// (AnnotationSource), in both reservation modes; in reservationMode Pods a
// placeholder pod (contract.PlaceholderLabel) also holds the room on the
// node, and NodeUsage counts its requests as reserved, not requested.
type Source interface {
	Reservations(s *Snapshot) []Reservation
}

// AnnotationSource reads the tandem.dev/reservation records on runner pods.
type AnnotationSource struct{}

var _ Source = AnnotationSource{}

// Reservations returns a reservation per runner pod with a record, runners
// that have finished excepted: tandem released those. A record that may
// not hold room is returned as PhaseInvalid, holding nothing, so that a
// record on a pod is never silently left out.
func (AnnotationSource) Reservations(s *Snapshot) []Reservation {
	var out []Reservation
	for _, pod := range s.Pods {
		if contract.IsTerminal(pod) {
			continue
		}
		rec, ok, err := contract.RecordedReservation(pod)
		if !ok {
			continue
		}
		r := Reservation{
			Namespace: pod.Namespace, Runner: pod.Name, RunnerUID: rec.RunnerUID,
			Node: rec.Node, Requests: rec.Requests, StepRequests: rec.StepRequests,
			HostPorts: rec.HostPorts, Source: string(rec.Source), StaleWorkflowPods: rec.StaleWorkflowPods,
			Since: scheduledSince(pod),
		}
		if err != nil {
			r.Invalid = "unreadable: " + err.Error()
		} else {
			r.Invalid = s.rules.invalid(pod, rec)
		}
		if r.Invalid != "" {
			r.Phase = PhaseInvalid
			r.Resized = s.rules.isRunner(pod) && s.rules.isTandem(pod) && pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil
		} else {
			u := holds(rec, pod, s.runnerPods(runnerKey(pod)))
			r.Phase, r.Holds, r.HeldPorts, r.WorkflowPod = u.phase, u.holds, u.ports, u.workflowPod
		}
		if r.Holds == nil {
			r.Holds = v1.ResourceList{}
		}
		out = append(out, r)
	}
	return out
}

// holdsNothingNote says what tandem does with a runner whose record is invalid,
// or that is bound without one.
const holdsNothingNote = "tandem holds no room for such a runner either (a WorkflowReservationNotRecorded Warning on it says so)"

func runnerKey(pod *v1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

// usage is what a reservation holds, given its runner's pods.
type usage struct {
	phase       Phase
	holds       v1.ResourceList
	ports       []string
	workflowPod string
}

// holds applies tandem's hold rule (contract.Holding) to what the API shows
// of the runner's pods, as the plugin applies it to the scheduler's
// snapshot. Of the pods labelled with the runner's name, only those of this
// runner incarnation count (contract.OfIncarnation). The workflow pod is the
// oldest of those labelled directly that is bound to the reserved node; the
// others there are container-step pods. A labelled pod bound to another node
// is not the workflow pod: it claims nothing.
//
// A workflow pod that came and was deleted leaves no trace in the API:
// such a reservation shows as held until its runner ends, as tandem holds
// it after a restart (docs/reliability.md).
func holds(rec contract.Recorded, runner *v1.Pod, pods []runnerPod) usage {
	var mine []runnerPod
	for _, rp := range pods {
		if contract.OfIncarnation(rp.pod, runner.CreationTimestamp.Time, rec.StaleWorkflowPods) {
			mine = append(mine, rp)
		}
	}
	var workflow *v1.Pod
	for _, rp := range mine {
		if !rp.viaJob && rp.pod.Spec.NodeName == rec.Node {
			workflow = rp.pod
			break
		}
	}
	var u usage
	if workflow == nil {
		// A workflow pod not bound yet, if any, for the user.
		for _, rp := range mine {
			if !rp.viaJob && rp.pod.Spec.NodeName == "" {
				u.workflowPod = rp.pod.Name
				break
			}
		}
	} else {
		u.workflowPod = workflow.Name
	}
	h := contract.Holding{Size: contract.AmountFromList(rec.Requests), Step: contract.AmountFromList(rec.StepRequests)}
	var on contract.RunnerPods
	for _, rp := range mine {
		if rp.pod != workflow && rp.pod.Spec.NodeName == rec.Node && !contract.IsTerminal(rp.pod) {
			on.Steps = on.Steps.Add(contract.AmountFromList(podRequests(rp.pod)))
		}
	}
	switch {
	case workflow == nil:
		u.phase = PhaseHeld
	case contract.IsTerminal(workflow):
		u.phase, h.Ended = PhaseFinished, true
	default:
		u.phase, on.Workflow, on.WorkflowRequest = PhaseClaimed, true, contract.AmountFromList(podRequests(workflow))
	}
	held, ports := h.Holds(on)
	u.holds = inUnitsOf(held.ToList(), rec.Requests)
	if ports {
		u.ports = rec.HostPorts
	}
	return u
}

// inUnitsOf returns l with each quantity in the format like writes it in
// (memory=4G stays 4G, not 3906250Ki); the values are l's.
func inUnitsOf(l, like v1.ResourceList) v1.ResourceList {
	for n, q := range l {
		if u, ok := like[n]; ok && u.Format != q.Format {
			l[n] = *resource.NewMilliQuantity(q.MilliValue(), u.Format)
		}
	}
	return l
}
