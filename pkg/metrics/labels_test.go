package metrics

import (
	"fmt"
	"testing"

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
