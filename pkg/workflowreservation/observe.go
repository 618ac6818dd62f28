package workflowreservation

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/tandem-scheduler/tandem/pkg/workflowreservation/metrics"
)

// recordMetrics sets the reservation gauges from the store's tally.
func (pl *WorkflowReservation) recordMetrics() {
	byPhase, held := pl.store.counts()
	for phase, n := range byPhase {
		metrics.Reservations.WithLabelValues(pl.profile, phase).Set(float64(n))
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
