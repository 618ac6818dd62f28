package reservations

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

// Encode is the record of r, the value of contract.ReservationAnnotation
// that the Binding of its runner carries.
func Encode(r *Reservation) (string, error) {
	rec := contract.Recorded{
		Node: r.Node, Requests: r.Size.ToList(), Source: r.Source,
		RunnerUID: r.RunnerUID, StaleWorkflowPods: r.Stale, StaleJob: r.StaleJob,
	}
	if !r.Step.IsZero() {
		rec.StepRequests = r.Step.ToList()
	}
	for _, p := range r.Ports {
		rec.HostPorts = append(rec.HostPorts, p.String())
	}
	return rec.Encode()
}

// FromPod rebuilds the reservation recorded on a bound runner pod. It
// returns nil, nil for pods that carry no reservation or are not bound.
func FromPod(pod *v1.Pod) (*Reservation, error) {
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	p, ok, err := contract.RecordedReservation(pod)
	if !ok || err != nil {
		return nil, err
	}
	ports, err := p.Validate(pod)
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %w", contract.ReservationAnnotation, err)
	}
	return &Reservation{
		Runner:        types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		RunnerUID:     pod.UID,
		RunnerCreated: pod.CreationTimestamp.Time,
		Stale:         p.StaleWorkflowPods,
		Node:          p.Node,
		Size:          contract.AmountFromList(p.Requests),
		Step:          contract.AmountFromList(p.StepRequests),
		Ports:         ports,
		Source:        p.Source,
		StaleJob:      p.StaleJob,
	}, nil
}
