package workflowreservation

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/tandem-scheduler/tandem/pkg/workflowreservation/metrics"
)

// recordMetrics sets the reservation gauges from the store.
func (pl *WorkflowReservation) recordMetrics() {
	counts := map[string]float64{"held": 0, "claimed": 0, "finished": 0}
	var held amount
	for _, r := range pl.store.list() {
		switch {
		case r.done:
			counts["finished"]++
		case r.claimedBy != "":
			counts["claimed"]++
		default:
			counts["held"]++
			held = held.add(r.size)
		}
	}
	for phase, n := range counts {
		metrics.Reservations.WithLabelValues(pl.profile, phase).Set(n)
	}
	metrics.ReservedResources.WithLabelValues(pl.profile, string(v1.ResourceCPU)).Set(float64(held.MilliCPU) / 1000)
	metrics.ReservedResources.WithLabelValues(pl.profile, string(v1.ResourceMemory)).Set(float64(held.Memory))
	metrics.ReservedResources.WithLabelValues(pl.profile, string(v1.ResourcePods)).Set(float64(held.Pods))
}

// observeClaim records how long r waited for its workflow pod.
func (pl *WorkflowReservation) observeClaim(r reservation) {
	if !r.reservedAt.IsZero() {
		metrics.ClaimDuration.WithLabelValues(pl.profile).Observe(time.Since(r.reservedAt).Seconds())
	}
}
