package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const perfItems = `{"dataItems":[
 {"data":{"Average":120.5},"unit":"pods/s","labels":{"Metric":"SchedulingThroughput","Name":"BenchmarkPerfScheduling/ChurnTandem/500Nodes/churn"}},
 {"data":{"Perc50":80,"Perc99":2000},"unit":"ms","labels":{"Metric":"scheduler_scheduling_attempt_duration_seconds","Name":"BenchmarkPerfScheduling/ChurnTandem/500Nodes/churn","result":"scheduled"}},
 {"data":{"Perc50":3,"Perc99":40},"unit":"ms","labels":{"Metric":"scheduler_scheduling_algorithm_duration_seconds","Name":"BenchmarkPerfScheduling/ChurnTandem/500Nodes/churn"}}
]}`

const windowItems = `{"dataItems":[
 {"data":{"Perc50":70,"Perc99":450},"unit":"ms","labels":{"Metric":"scheduler_scheduling_attempt_duration_seconds","Name":"BenchmarkPerfScheduling/ChurnTandem/500Nodes/window","result":"scheduled"}},
 {"data":{"Perc50":2,"Perc99":30},"unit":"ms","labels":{"Metric":"scheduler_scheduling_algorithm_duration_seconds","Name":"BenchmarkPerfScheduling/ChurnTandem/500Nodes/window"}},
 {"data":{"Perc99":160},"unit":"ms","labels":{"Metric":"apiserver_request_duration_seconds","Name":"BenchmarkPerfScheduling/ChurnTandem/500Nodes/window","subresource":"binding"}},
 {"data":{"Total":9000,"PerPod":4.5},"unit":"requests","labels":{"Metric":"apiserver_pod_writes","Name":"BenchmarkPerfScheduling/ChurnTandem/500Nodes/window"}},
 {"data":{"HintUsed":1500,"NoHint":450,"HintNotUsed":50},"unit":"attempts","labels":{"Metric":"scheduler_batch_attempts_total","Name":"BenchmarkPerfScheduling/ChurnTandem/500Nodes/window"}}
]}`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The window's latencies replace scheduler_perf's, which cover the whole
// workload; the throughput stays scheduler_perf's.
func TestReadDirPrefersTheWindow(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"BenchmarkPerfScheduling_benchmark_tandem_2026-12-01T20:00:00Z.json": perfItems,
		"window-ChurnTandem_500Nodes.json":                                   windowItems,
	})
	samples, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := key("ChurnTandem", "500Nodes")
	got, why := sampleOf(samples, k)
	if got == nil {
		t.Fatalf("no sample: %s", why)
	}
	want := Sample{Throughput: 120.5, P50: 70, P99: 450, AlgorithmP50: 2, AlgorithmP99: 30, BindingP99: 160, PodWritesPerPod: 4.5,
		Batched: 0.75, HintedAttempts: 1500, Windowed: true}
	if *got != want {
		t.Errorf("sample %+v, want %+v", *got, want)
	}
}

// A run without its window is not compared: its latencies would include
// the warm-up.
func TestRunWithoutWindowFails(t *testing.T) {
	dir := writeFiles(t, map[string]string{"BenchmarkPerfScheduling_benchmark_tandem_2026-12-01T20:00:00Z.json": perfItems})
	samples, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, why := sampleOf(samples, key("ChurnTandem", "500Nodes"))
	if got != nil || !strings.Contains(why, "no measured window") {
		t.Errorf("sample %+v, reason %q: want none, for want of a window", got, why)
	}
}
