// Package metricstest checks a package's LabelNames against its collectors.
package metricstest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// LabelNamesMatch fails t unless labelNames says, for every collector, its
// name and its variable labels in order: what dashboards and alerts checked
// against labelNames (test/integration, checkMonitoring) may select on.
func LabelNamesMatch(t *testing.T, labelNames func(string) ([]string, bool), collectors ...prometheus.Collector) {
	t.Helper()
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		close(ch)
		desc := (<-ch).String()
		_, rest, ok := strings.Cut(desc, `fqName: "`)
		if !ok {
			t.Fatalf("%q names no fqName", desc)
		}
		name, _, _ := strings.Cut(rest, `"`)
		labels, ok := labelNames(name)
		if !ok {
			t.Errorf("LabelNames(%q): not exported, but registered as %s", name, desc)
			continue
		}
		if want := "variableLabels: {" + strings.Join(labels, ",") + "}"; !strings.Contains(desc, want) {
			t.Errorf("LabelNames(%q) = %q, but the collector is %s", name, labels, desc)
		}
	}
}
