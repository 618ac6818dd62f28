// Package bench measures tandem's scheduling cost against vanilla
// kube-scheduler with the official scheduler_perf harness: the same
// workloads (performance-config.yaml) under two scheduler configurations.
// hack/bench-scheduler.sh runs each workload's two sides in alternating
// order many times and compares them (test/bench/compare); hack/bench.sh is
// the quick throughput-only run.
package bench

import (
	"fmt"
	"os"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/ktesting"

	"github.com/tandem-scheduler/tandem/harness/inprocess"
)

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func BenchmarkPerfScheduling(b *testing.B) {
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "tandem", inprocess.Registry(), perf.WithPrepareFn(startHook))
}

// startHook runs the container hook emulator (Hook) and the measured
// window's recorder (Window) for the workload.
func startHook(tCtx ktesting.TContext) error {
	stop, err := StartHook(tCtx, tCtx.Client())
	if err != nil {
		return err
	}
	tCtx.Cleanup(stop)
	stopWindow, err := StartWindow(tCtx, tCtx.Client(), tCtx.Name())
	if err != nil {
		return err
	}
	tCtx.Cleanup(func() {
		if err := stopWindow(); err != nil {
			tCtx.Error(err)
		}
	})
	return nil
}
