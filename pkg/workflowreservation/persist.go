package workflowreservation

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/pkg/contract"
)

// encodeReservation is the record of r, the value of
// contract.ReservationAnnotation.
func encodeReservation(r *reservation) (string, error) {
	rec := contract.Recorded{
		Node: r.node, Requests: r.size.toList(), Source: r.source,
		RunnerUID: r.runnerUID, StaleWorkflowPods: r.stale, StaleJob: r.staleJob,
	}
	if !r.step.isZero() {
		rec.StepRequests = r.step.toList()
	}
	for _, p := range r.ports {
		rec.HostPorts = append(rec.HostPorts, p.String())
	}
	return rec.Encode()
}

// reservationFromPod rebuilds the reservation recorded on a bound runner pod.
// It returns nil, nil for pods that carry no reservation or are not bound.
func reservationFromPod(pod *v1.Pod) (*reservation, error) {
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
	return &reservation{
		runner:        types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		runnerUID:     pod.UID,
		runnerCreated: pod.CreationTimestamp.Time,
		stale:         p.StaleWorkflowPods,
		node:          p.Node,
		size:          amountFromList(p.Requests),
		step:          amountFromList(p.StepRequests),
		ports:         ports,
		source:        p.Source,
		staleJob:      p.StaleJob,
		bound:         true,
	}, nil
}
