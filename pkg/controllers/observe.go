package controllers

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	basemetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// runReconciler reconciles the store with the cluster once the handlers
// have seen every object, and then every reconcile interval, on every
// replica: a standby's store must hold what the leader's holds (a
// reservation whose workflow pod finished before a restart), or a failover
// would get it wrong. Only the leader says what it repaired (events, metrics).
func (f *Feeder) runReconciler(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), f.synced) {
		return
	}
	f.claimListed(klog.FromContext(ctx))
	first := true
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		f.Reconcile(ctx)
		if first {
			first = false
			close(f.reconciled)
		}
	}, f.reconcileEvery)
}

// speakWhenLeading waits until this replica leads, then exports the
// reservation gauges. A standby keeps its store warm but says nothing:
// every replica would say it once.
func (f *Feeder) speakWhenLeading(ctx context.Context) {
	select {
	case <-f.leader.Elected():
	case <-ctx.Done():
		return
	}
	if !cache.WaitForCacheSync(ctx.Done(), f.synced) {
		return
	}
	klog.FromContext(ctx).V(2).Info("Leading: exporting reservation metrics, reporting repairs", "reconcileInterval", f.reconcileEvery)
	f.recordMetrics()
}

// recordMetrics sets the reservation gauges from the store's tally, if this
// replica leads.
func (f *Feeder) recordMetrics() {
	if !f.leader.IsLeader() {
		return
	}
	g := f.reservationGauges()
	byPhase, held := f.store.Counts()
	g.held.Set(float64(byPhase[reservations.PhaseHeld]))
	g.claimed.Set(float64(byPhase[reservations.PhaseClaimed]))
	g.finished.Set(float64(byPhase[reservations.PhaseFinished]))
	g.cpu.Set(float64(held.MilliCPU) / 1000)
	g.memory.Set(float64(held.Memory))
	g.pods.Set(float64(held.Pods))
	for name, v := range held.Scalar {
		metrics.ReservedResources.WithLabelValues(g.profile, string(name)).Set(float64(v))
	}
}

// reservationGauges are the series recordMetrics sets on every call.
type reservationGauges struct {
	profile                 string
	held, claimed, finished basemetrics.GaugeMetric
	cpu, memory, pods       basemetrics.GaugeMetric
}

// reservationGauges returns the series of the reservation gauges, looked
// up on the first call once they are registered (before, a lookup returns
// a series that records nothing). The reservations of every profile are
// one set: the gauges carry the first profile's name only, so that they do
// not add up twice.
func (f *Feeder) reservationGauges() *reservationGauges {
	if g := f.gauges.Load(); g != nil {
		return g
	}
	profile := f.firstProfile().Name
	g := &reservationGauges{
		profile:  profile,
		held:     metrics.Reservations.WithLabelValues(profile, reservations.PhaseHeld),
		claimed:  metrics.Reservations.WithLabelValues(profile, reservations.PhaseClaimed),
		finished: metrics.Reservations.WithLabelValues(profile, reservations.PhaseFinished),
		cpu:      metrics.ReservedResources.WithLabelValues(profile, string(v1.ResourceCPU)),
		memory:   metrics.ReservedResources.WithLabelValues(profile, string(v1.ResourceMemory)),
		pods:     metrics.ReservedResources.WithLabelValues(profile, string(v1.ResourcePods)),
	}
	if !metrics.Reservations.IsCreated() || !metrics.ReservedResources.IsCreated() {
		return g
	}
	f.gauges.CompareAndSwap(nil, g)
	return f.gauges.Load()
}

// observeClaim records how long r waited for its workflow pod, claimed in
// profile.
func (f *Feeder) observeClaim(profile string, r reservations.Reservation) {
	if !r.ReservedAt.IsZero() && f.leader.IsLeader() {
		metrics.ClaimDuration.WithLabelValues(profile).Observe(time.Since(r.ReservedAt).Seconds())
	}
}
