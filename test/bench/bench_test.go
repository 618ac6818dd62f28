// Package bench measures tandem's scheduling throughput against vanilla
// kube-scheduler with the official scheduler_perf harness: the same
// workloads run under two scheduler configurations in one `go test -bench`
// run. hack/bench.sh runs it and prints the throughput ratios.
package bench

import (
	"fmt"
	"os"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"

	"github.com/tandem-scheduler/tandem/pkg/inprocess"
)

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func BenchmarkPerfScheduling(b *testing.B) {
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "tandem", inprocess.Registry())
}
