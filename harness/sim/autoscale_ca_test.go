package sim

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// TestClusterAutoscalerOptions: the scenario's autoscale section becomes one
// node group per instance size bounded by the cpu limit, the limit over the
// whole cluster, and every duration compressed by the time scale.
func TestClusterAutoscalerOptions(t *testing.T) {
	spec := &scenario.Autoscale{
		Autoscaler:       scenario.ClusterAutoscaler,
		InstanceCPUs:     []int{4, 8, 16},
		CPULimit:         96,
		ConsolidateAfter: metav1.Duration{Duration: time.Minute},
		ClusterAutoscaler: &scenario.ClusterAutoscalerFlags{
			ScaleDownDelayAfterAdd: metav1.Duration{Duration: 2 * time.Minute},
			SchedulerNames:         []string{"tandem-scheduler"},
		},
	}
	toReal := func(d time.Duration) time.Duration { return d / 10 }
	groups, flags := clusterAutoscalerOptions(spec, toReal, 4)
	var maxes []int
	for _, g := range groups {
		maxes = append(maxes, g.Max)
		if g.MemoryPerCPU != 2<<30 || g.Min != 0 {
			t.Errorf("group %+v: want family c (2 GiB per cpu), min 0", g)
		}
	}
	if !slices.Equal(maxes, []int{24, 12, 6}) {
		t.Errorf("group maxima %v, want 24, 12, 6 (96 cpus of each size)", maxes)
	}
	want := []string{
		"--scan-interval=1s", "--expander=least-waste", "--allowed-scheduler-names=tandem-scheduler",
		"--scale-down-unneeded-time=6s", "--scale-down-delay-after-add=12s",
		"--unremovable-node-recheck-timeout=30s", "--node-delete-delay-after-taint=500ms",
		"--max-node-provision-time=1m30s", "--v=1",
		"--initial-node-group-backoff-duration=30s", "--max-node-startup-time=1m30s", "--scale-down-delay-after-failure=18s",
		"--cores-total=0:100",
	}
	if got := flags.Args(); !slices.Equal(got, want) {
		t.Errorf("flags\n%v\nwant\n%v", got, want)
	}
}
