package workflowreservation

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
)

// ReservationAnnotation is written on a runner pod by the Binding that binds
// it. It is the durable record of the reservation: after a restart or a
// leader change tandem rebuilds its reservations from the runner pods that
// carry it, and `kubectl describe pod` shows it.
const ReservationAnnotation = "tandem.dev/reservation"

// Recorded is a reservation as recorded on its runner pod (the
// annotation's JSON form).
type Recorded struct {
	// Node holds the room.
	Node string `json:"node"`
	// Requests is the room held: the workflow pod's request, step headroom
	// included, and one pod.
	Requests v1.ResourceList `json:"requests"`
	// Source says where the size came from.
	Source Source `json:"source"`
	// StepRequests is the part of Requests held for container-step pods
	// (one pod included); after the workflow pod's claim only it stays held.
	StepRequests v1.ResourceList `json:"stepRequests,omitempty"`
	// HostPorts are the host ports held for the workflow pod ("6379/TCP").
	HostPorts []string `json:"hostPorts,omitempty"`
	// StaleJob is the job the runner's EphemeralRunner showed when the
	// reservation was taken, an earlier runner's: it does not start the
	// grace of a job without a container.
	StaleJob string `json:"staleJob,omitempty"`
	// RunnerUID is the runner pod the reservation was taken for. A record
	// copied onto another pod, or written by hand before the pod existed,
	// does not match the pod's UID and holds nothing.
	RunnerUID types.UID `json:"runnerUID"`
	// StaleWorkflowPods are the workflow pods of an earlier runner of the
	// same name that existed when the reservation was taken: they never
	// claim it.
	StaleWorkflowPods []types.UID `json:"staleWorkflowPods,omitempty"`
}

// RecordedReservation reads the reservation recorded on a runner pod; ok is
// false when the pod carries none. Tools outside the scheduler (the
// simulator's invariant checker, kubectl plugins) read reservations with it.
// It does not check that the record belongs to the pod (see
// Recorded.RunnerUID).
func RecordedReservation(pod *v1.Pod) (r Recorded, ok bool, err error) {
	value, ok := pod.Annotations[ReservationAnnotation]
	if !ok {
		return Recorded{}, false, nil
	}
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return Recorded{}, true, fmt.Errorf("annotation %s: %w", ReservationAnnotation, err)
	}
	return r, true, nil
}

func encodeReservation(r *reservation) (string, error) {
	rec := Recorded{
		Node: r.node, Requests: r.size.toList(), Source: r.source,
		RunnerUID: r.runnerUID, StaleWorkflowPods: r.stale, StaleJob: r.staleJob,
	}
	if !r.step.isZero() {
		rec.StepRequests = r.step.toList()
	}
	for _, p := range r.ports {
		rec.HostPorts = append(rec.HostPorts, p.String())
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// reservationFromPod rebuilds the reservation recorded on a bound runner pod.
// It returns nil, nil for pods that carry no reservation or are not bound.
func reservationFromPod(pod *v1.Pod) (*reservation, error) {
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	p, ok, err := RecordedReservation(pod)
	if !ok || err != nil {
		return nil, err
	}
	if p.RunnerUID != pod.UID {
		return nil, fmt.Errorf("annotation %s was recorded for pod UID %q, not this pod (%s)", ReservationAnnotation, p.RunnerUID, pod.UID)
	}
	if p.Node != pod.Spec.NodeName {
		return nil, fmt.Errorf("annotation %s names node %q but the pod is bound to %q", ReservationAnnotation, p.Node, pod.Spec.NodeName)
	}
	size := amountFromList(p.Requests)
	if size.isZero() || size.negative() {
		return nil, fmt.Errorf("annotation %s holds no valid requests: %s", ReservationAnnotation, formatResourceList(p.Requests))
	}
	step := amountFromList(p.StepRequests)
	if step.negative() || !size.sub(step).atLeastZero().add(step).equal(size) {
		return nil, fmt.Errorf("annotation %s: stepRequests %s are not within requests %s", ReservationAnnotation, formatResourceList(p.StepRequests), formatResourceList(p.Requests))
	}
	var ports []config.HostPort
	for _, s := range p.HostPorts {
		hp, err := config.ParseHostPort(s)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", ReservationAnnotation, err)
		}
		ports = append(ports, hp)
	}
	return &reservation{
		runner:        types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		runnerUID:     pod.UID,
		runnerCreated: pod.CreationTimestamp.Time,
		stale:         p.StaleWorkflowPods,
		node:          p.Node,
		size:          size,
		step:          step,
		ports:         ports,
		source:        p.Source,
		staleJob:      p.StaleJob,
		bound:         true,
	}, nil
}
