package metrics

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/tandem-scheduler/tandem/pkg/internal/metricstest"
)

// LabelNames says what every registered collector describes: its name and
// its variable labels, in order, so dashboards and alerts checked against
// it (test/integration TestDeployRenderedManifests, checkMonitoring) check the real thing.
func TestLabelNamesMatchTheCollectors(t *testing.T) {
	Register()
	metricstest.LabelNamesMatch(t, LabelNames, Reservations, ReservedResources, ClaimDuration, Releases, Repairs, PairPods, PlaceholderPods, WorkflowPodsRejected)
	if labels, ok := LabelNames(Subsystem + "_claim_duration_seconds_bucket"); !ok || fmt.Sprint(labels) != "[profile le]" {
		t.Errorf("LabelNames(claim_duration_seconds_bucket) = %q, %v; want [profile le]", labels, ok)
	}
	if _, ok := LabelNames(Subsystem + "_reservations_bucket"); ok {
		t.Errorf("LabelNames(reservations_bucket): exported, but reservations is a gauge")
	}
}

// Issue 40: the alerts count with increase(), which sees nothing of a
// series that appears at 1: the series they count exist at 0 from the
// start.
func TestAlertedSeriesStartAtZero(t *testing.T) {
	RegisterProfile("p1")
	// Gathered, not asked for: WithLabelValues would make the series.
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		Subsystem + "_workflow_pods_rejected_total": {"OutOfcpu", "OutOfmemory", "OutOfephemeral-storage", "OutOfpods", RejectedOther},
		Subsystem + "_placeholder_pods_total":       {PlaceholderReleasedLate, PlaceholderLost, PlaceholderFailed},
		Subsystem + "_pair_pods_total":              {PairPodFailed},
		Subsystem + "_repairs_total":                slices.Clone(repairKinds),
	}
	for _, f := range families {
		values, ok := want[f.GetName()]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				values = slices.DeleteFunc(values, func(v string) bool { return v == l.GetValue() })
			}
		}
		want[f.GetName()] = values
	}
	for name, missing := range want {
		if len(missing) > 0 {
			t.Errorf("%s has no series %q after Register", name, missing)
		}
	}
}
