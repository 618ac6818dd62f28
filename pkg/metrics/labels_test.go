package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// LabelNames says what every registered collector describes: its name and
// its variable labels, in order, so dashboards and alerts checked against
// it (test/integration TestDeployRenderedManifests, checkMonitoring) check the real thing.
func TestLabelNamesMatchTheCollectors(t *testing.T) {
	Register()
	for _, c := range []prometheus.Collector{Reservations, ReservedResources, ClaimDuration, Releases, Repairs, PairPods, PlaceholderPods} {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		close(ch)
		desc := (<-ch).String()
		name := between(t, desc, `fqName: "`, `"`)
		labels, ok := LabelNames(name)
		if !ok {
			t.Errorf("LabelNames(%q): not exported, but registered as %s", name, desc)
			continue
		}
		if want := "variableLabels: {" + strings.Join(labels, ",") + "}"; !strings.Contains(desc, want) {
			t.Errorf("LabelNames(%q) = %q, but the collector is %s", name, labels, desc)
		}
	}
	if labels, ok := LabelNames(Subsystem + "_claim_duration_seconds_bucket"); !ok || fmt.Sprint(labels) != "[profile le]" {
		t.Errorf("LabelNames(claim_duration_seconds_bucket) = %q, %v; want [profile le]", labels, ok)
	}
	if _, ok := LabelNames(Subsystem + "_reservations_bucket"); ok {
		t.Errorf("LabelNames(reservations_bucket): exported, but reservations is a gauge")
	}
}

func between(t *testing.T, s, from, to string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		t.Fatalf("%q has no %q", s, from)
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}
