package webhook

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Subsystem prefixes every metric of the webhook: tandem_webhook_*.
const (
	namespace = "tandem"
	subsystem = "webhook"
)

// Steps of a review that can fail (the "step" label of admissionErrors).
const (
	stepDecode         = "decode"
	stepGetPlaceholder = "get_placeholder"
	stepGetRunner      = "get_runner"
	stepDelete         = "delete"
)

var (
	// reviews counts the admission reviews answered, by what was done:
	// "deleted" (a placeholder made room), "none" (nothing to do), "error"
	// (allowed with a warning), "saturated" (answered 429 unread: too many
	// in flight).
	reviews = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "admission_reviews_total",
			Help:           "Number of pod admission reviews answered (all allowed), by outcome.",
			StabilityLevel: metrics.ALPHA,
		},
		[]string{"outcome"},
	)
	// placeholdersDeleted counts the placeholders deleted for a workflow
	// pod, an already-gone one (NotFound, UID conflict) not counted.
	placeholdersDeleted = metrics.NewCounter(
		&metrics.CounterOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "placeholders_deleted_total",
			Help:           "Number of placeholder pods deleted to make room for their runner's pinned workflow pod.",
			StabilityLevel: metrics.ALPHA,
		},
	)
	// admissionErrors counts the reviews that failed at a step and were
	// allowed with a warning.
	admissionErrors = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "admission_errors_total",
			Help:           "Number of pod admission reviews that failed at a step and allowed the pod with a warning.",
			StabilityLevel: metrics.ALPHA,
		},
		[]string{"step"},
	)
	// reviewDuration is the time a review took, the API calls included.
	reviewDuration = metrics.NewHistogram(
		&metrics.HistogramOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "admission_duration_seconds",
			Help:           "Time to answer a pod admission review, API calls included.",
			Buckets:        metrics.ExponentialBuckets(0.001, 2, 14),
			StabilityLevel: metrics.ALPHA,
		},
	)
)

// LabelNames returns the label names of the webhook metric named fqName, a
// family or, for the histogram, one of its series as /metrics exposes them
// (_bucket adds le), and whether the webhook exports it: what dashboards
// and alerts may select on (the chart's are checked against it).
func LabelNames(fqName string) ([]string, bool) {
	prefix := namespace + "_" + subsystem + "_"
	switch fqName {
	case prefix + "admission_reviews_total":
		return []string{"outcome"}, true
	case prefix + "admission_errors_total":
		return []string{"step"}, true
	case prefix + "placeholders_deleted_total", prefix + "admission_duration_seconds_sum", prefix + "admission_duration_seconds_count":
		return []string{}, true
	case prefix + "admission_duration_seconds_bucket":
		return []string{"le"}, true
	}
	return nil, false
}

var registerOnce sync.Once

// RegisterMetrics registers the webhook's metrics into the legacy registry
// (served on /metrics). NewHandler calls it; calling it again does nothing.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(reviews, placeholdersDeleted, admissionErrors, reviewDuration)
		// The series the alerts count with increase() exist from the start,
		// at 0: one that appears at 1 shows no increase.
		for _, step := range []string{stepDecode, stepGetPlaceholder, stepGetRunner, stepDelete} {
			admissionErrors.WithLabelValues(step)
		}
		for _, outcome := range []string{outcomeDeleted, outcomeNone, outcomeError, outcomeSaturated} {
			reviews.WithLabelValues(outcome)
		}
	})
}
