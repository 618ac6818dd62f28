// Package metrics holds tandem-scheduler's metrics, those of the
// WorkflowReservation plugin and of its controllers. They are registered into
// the legacy registry, which kube-scheduler serves on /metrics.
package metrics

import (
	"slices"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Subsystem prefixes every metric: scheduler_workflow_reservation_*.
const Subsystem = "scheduler_workflow_reservation"

// Release reasons.
const (
	ReleaseRunnerFinished = "runner_finished"
	ReleaseRunnerDeleted  = "runner_deleted"
	ReleaseNodeDeleted    = "node_deleted"
	ReleaseUnreserved     = "unreserved"
	ReleaseNoWorkflowPod  = "no_workflow_pod"
)

// Repairs the reconciler makes, by kind.
const (
	RepairRunnerGone = "runner_gone"
	RepairNodeGone   = "node_gone"
	RepairMoved      = "moved"
	RepairClaimed    = "claimed"
	RepairFinished   = "finished"
	RepairInvalid    = "invalid"
	// RepairNotARunner: no EphemeralRunner controls the pod (seen once
	// ARC's EphemeralRunners were listed, after the reservation was rebuilt).
	RepairNotARunner = "not_a_runner"
)

// PlaceholderLost is the action of a placeholder removed by someone else.
const PlaceholderLost = "lost"

// PlaceholderReleasedLate is the action of a placeholder that still held its
// room when its runner's workflow pod was created pinned to the node:
// tandem-webhook did not release it (down, unreachable, not installed),
// and tandem's fallback deletes it after the pod is stored.
const PlaceholderReleasedLate = "released_late"

// Placeholder pod actions shared with pair pods.
const (
	PlaceholderCreated   = PairPodCreated
	PlaceholderDeleted   = PairPodDeleted
	PlaceholderFailed    = PairPodFailed
	PlaceholderNameTaken = PairPodNameTaken
)

// Pair pod actions.
const (
	PairPodCreated = "created"
	PairPodDeleted = "deleted"
	PairPodFailed  = "failed"
	// PairPodNameTaken: a pod tandem did not create had the name, and the
	// pod was created under a generated one.
	PairPodNameTaken = "name_taken"
)

var (
	// Reservations counts reservations by phase: "held" (waiting for the
	// workflow pod), "claimed" (the workflow pod took it), "finished" (the
	// workflow pod is gone, the runner not yet).
	Reservations = metrics.NewGaugeVec(
		&metrics.GaugeOpts{
			Subsystem:      Subsystem,
			Name:           "reservations",
			Help:           "Number of workflow reservations by phase.",
			StabilityLevel: metrics.ALPHA,
		},
		reservationsLabels,
	)
	// ReservedResources is the room held for workflow pods that have not
	// arrived yet, in the resource's base unit (cores for cpu, bytes).
	ReservedResources = metrics.NewGaugeVec(
		&metrics.GaugeOpts{
			Subsystem:      Subsystem,
			Name:           "reserved_resources",
			Help:           "Resources held for workflow pods not yet arrived, in base units (cpu in cores, memory in bytes).",
			StabilityLevel: metrics.ALPHA,
		},
		reservedResourcesLabels,
	)
	// ClaimDuration is the time from taking a reservation to its workflow
	// pod claiming it.
	ClaimDuration = metrics.NewHistogramVec(
		&metrics.HistogramOpts{
			Subsystem:      Subsystem,
			Name:           "claim_duration_seconds",
			Help:           "Time from reserving room for a workflow pod to the pod claiming it.",
			Buckets:        metrics.ExponentialBuckets(0.5, 2, 14),
			StabilityLevel: metrics.ALPHA,
		},
		claimDurationLabels,
	)
	// Releases counts reservations dropped before or after their claim, by reason.
	Releases = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      Subsystem,
			Name:           "releases_total",
			Help:           "Number of workflow reservations released, by reason and whether they had been claimed.",
			StabilityLevel: metrics.ALPHA,
		},
		releasesLabels,
	)

	// Repairs counts what the reconciler found out of step with the
	// cluster and repaired, by kind.
	Repairs = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      Subsystem,
			Name:           "repairs_total",
			Help:           "Number of workflow reservations the reconciler found out of step with the cluster and repaired, by kind.",
			StabilityLevel: metrics.ALPHA,
		},
		repairsLabels,
	)

	// PairPods counts the pending pods of a pair's size created for
	// cluster autoscalers and deleted once their runner was bound or gone.
	PairPods = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      Subsystem,
			Name:           "pair_pods_total",
			Help:           "Number of pending pair pods (runner plus its reservation, for cluster autoscalers) created, deleted, and failed to create.",
			StabilityLevel: metrics.ALPHA,
		},
		podActionLabels,
	)

	// PlaceholderPods counts the placeholder pods that hold reservations on
	// their nodes (reservationMode: Pods): created, deleted (the workflow
	// pod came, the runner went), failed to create, and lost (removed by
	// someone else: evicted, preempted, rejected by the kubelet).
	PlaceholderPods = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      Subsystem,
			Name:           "placeholder_pods_total",
			Help:           "Number of placeholder pods holding workflow reservations created, deleted, failed to create, and lost to someone else.",
			StabilityLevel: metrics.ALPHA,
		},
		podActionLabels,
	)

	// WorkflowPodsRejected counts the workflow and step pods of runners
	// holding a reservation that a kubelet rejected at admission (Failed, "Pod was rejected: ..."), by
	// the kubelet's reason: the failure tandem exists to prevent.
	WorkflowPodsRejected = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      Subsystem,
			Name:           "workflow_pods_rejected_total",
			Help:           "Number of workflow and step pods of runners holding a reservation that a kubelet rejected at admission, by the kubelet's reason (OutOfcpu, OutOfmemory, OutOfephemeral-storage, OutOfpods, Other).",
			StabilityLevel: metrics.ALPHA,
		},
		rejectedLabels,
	)

	registerOnce sync.Once
)

// Kubelet admission reasons WorkflowPodsRejected counts by name; any other
// is RejectedOther (the kubelet's own allow-list for its admission metric
// does the same: extended resources would make the label unbounded).
var rejectedReasons = []string{"OutOfcpu", "OutOfmemory", "OutOfephemeral-storage", "OutOfpods"}

// RejectedOther is the reason label of any other kubelet rejection.
const RejectedOther = "Other"

// RejectedReason is the reason label for a kubelet's rejection reason.
func RejectedReason(reason string) string {
	if slices.Contains(rejectedReasons, reason) {
		return reason
	}
	return RejectedOther
}

// LabelNames returns the label names of the tandem metric named fqName, a
// family or, for a histogram, one of its series as /metrics exposes them
// (_bucket adds le), and whether tandem exports it: what dashboards and
// alerts may select on.
func LabelNames(fqName string) ([]string, bool) {
	for _, m := range []struct {
		name   string
		labels []string
		suffix []string
	}{
		{Subsystem + "_reservations", reservationsLabels, nil},
		{Subsystem + "_reserved_resources", reservedResourcesLabels, nil},
		{Subsystem + "_claim_duration_seconds", claimDurationLabels, []string{"_bucket", "_sum", "_count"}},
		{Subsystem + "_releases_total", releasesLabels, nil},
		{Subsystem + "_repairs_total", repairsLabels, nil},
		{Subsystem + "_pair_pods_total", podActionLabels, nil},
		{Subsystem + "_placeholder_pods_total", podActionLabels, nil},
		{Subsystem + "_workflow_pods_rejected_total", rejectedLabels, nil},
	} {
		if fqName == m.name {
			return slices.Clone(m.labels), true
		}
		for _, suf := range m.suffix {
			if fqName == m.name+suf {
				if suf == "_bucket" {
					return append(slices.Clone(m.labels), "le"), true
				}
				return slices.Clone(m.labels), true
			}
		}
	}
	return nil, false
}

// The label names of each metric.
var (
	reservationsLabels      = []string{"profile", "phase"}
	reservedResourcesLabels = []string{"profile", "resource"}
	claimDurationLabels     = []string{"profile"}
	releasesLabels          = []string{"profile", "reason", "claimed"}
	repairsLabels           = []string{"profile", "kind"}
	podActionLabels         = []string{"action"}
	rejectedLabels          = []string{"reason"}
)

// Register registers the metrics once per process.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(Reservations, ReservedResources, ClaimDuration, Releases, Repairs, PairPods, PlaceholderPods, WorkflowPodsRejected)
		// The series alerts count with increase() exist from the start, at
		// 0: a counter whose series appears at 1 shows no increase, and the
		// first rejection (or late release) would go unalerted.
		for _, reason := range append(slices.Clone(rejectedReasons), RejectedOther) {
			WorkflowPodsRejected.WithLabelValues(reason)
		}
		for _, action := range []string{PlaceholderReleasedLate, PlaceholderLost, PlaceholderFailed} {
			PlaceholderPods.WithLabelValues(action)
		}
		PairPods.WithLabelValues(PairPodFailed)
	})
}

// repairKinds are the kinds of Repairs.
var repairKinds = []string{RepairRunnerGone, RepairNodeGone, RepairMoved, RepairClaimed, RepairFinished, RepairInvalid, RepairNotARunner}

// RegisterProfile makes the series of profile that alerts count with
// increase() exist at 0 (Register does it for the series without a
// profile label): the reconciler's repairs, by kind.
func RegisterProfile(profile string) {
	Register()
	for _, kind := range repairKinds {
		Repairs.WithLabelValues(profile, kind)
	}
}
