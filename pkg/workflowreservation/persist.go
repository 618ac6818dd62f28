package workflowreservation

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReservationAnnotation is written on a runner pod before it is bound. It is
// the durable record of the reservation: after a restart or a leader change
// tandem rebuilds its reservations from the runner pods that carry it, and
// `kubectl describe pod` shows it.
const ReservationAnnotation = "tandem.dev/reservation"

// persistedReservation is the annotation's JSON form.
type persistedReservation struct {
	Node     string          `json:"node"`
	Requests v1.ResourceList `json:"requests"`
	Source   Source          `json:"source"`
}

func encodeReservation(r *reservation) (string, error) {
	b, err := json.Marshal(persistedReservation{Node: r.node, Requests: r.size.toList(), Source: r.source})
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// reservationPatch is the merge patch that records r on its runner pod.
func reservationPatch(r *reservation) ([]byte, error) {
	value, err := encodeReservation(r)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]string{ReservationAnnotation: value},
		},
	})
}

// reservationFromPod rebuilds the reservation recorded on a bound runner pod.
// It returns nil, nil for pods that carry no reservation.
func reservationFromPod(pod *v1.Pod) (*reservation, error) {
	value, ok := pod.Annotations[ReservationAnnotation]
	if !ok || pod.Spec.NodeName == "" {
		return nil, nil
	}
	var p persistedReservation
	if err := json.Unmarshal([]byte(value), &p); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", ReservationAnnotation, err)
	}
	if p.Node != pod.Spec.NodeName {
		return nil, fmt.Errorf("annotation %s names node %q but the pod is bound to %q", ReservationAnnotation, p.Node, pod.Spec.NodeName)
	}
	return &reservation{
		runner:    types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		runnerUID: pod.UID,
		node:      p.Node,
		size:      amountFromList(p.Requests),
		source:    p.Source,
	}, nil
}
