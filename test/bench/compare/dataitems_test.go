package compare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// testdata/runs holds four recorded runs (Churn and Saturation at 500 nodes,
// both sides, one repetition) as bench-scheduler left them on 2026-12-01:
// result.json, scheduler_perf's data items and progress samples, but no
// measured window and no invocation, which bench-scheduler did not record
// then.
func TestReadResultsRecorded(t *testing.T) {
	results, _, _, err := ReadResults(filepath.Join("testdata", "runs"), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 {
		t.Fatalf("results = %d, want 4", len(results))
	}
	// Without its window a run's latencies cover the warm-up: it is not
	// compared.
	for _, res := range results {
		if res.Sample != nil || !strings.Contains(res.Err, "no measured window") {
			t.Errorf("%s %s: sample %+v, error %q; want none, for want of a window", res.Workload.ID(), res.Side, res.Sample, res.Err)
		}
	}

	// The same runs with a window each, two of them (Churn) left by an
	// earlier invocation of another commit: a report rebuilt from the
	// folder reads the latest invocation's runs only, or the one named.
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "runs"))); err != nil {
		t.Fatal(err)
	}
	runDirs, err := filepath.Glob(filepath.Join(dir, "r*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range runDirs {
		var rec record
		data, err := os.ReadFile(filepath.Join(d, "result.json"))
		if err == nil {
			err = json.Unmarshal(data, &rec)
		}
		if err != nil {
			t.Fatal(err)
		}
		rec.RunID, rec.Commit = "20261202T100000", "def5678"
		if rec.Base == "Churn" {
			rec.RunID, rec.Commit = "20261201T110000", "abc1234"
		}
		testCase := Workload{Base: rec.Base}.TestCase(rec.Side)
		window := strings.ReplaceAll(windowItems, "ChurnTandem/500Nodes", testCase+"/"+rec.Workload)
		if data, err = json.Marshal(rec); err == nil {
			err = os.WriteFile(filepath.Join(d, "result.json"), data, 0o644)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(d, "window-"+testCase+"_"+rec.Workload+".json"), []byte(window), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	churn := Workload{Base: "Churn", Name: "500Nodes_2000Pairs_4Rounds", Nodes: 500}
	saturation := Workload{Base: "Saturation", Name: "500Nodes_2000Pairs_1000Waiting", Nodes: 500}
	// Values read off the recorded files by hand: SchedulingThroughput's
	// Average, and attempts per bound pod between the first and last
	// progress sample, e.g. (7811-2636)/(4487-2509) = 2.616 for
	// Saturation's tandem side; the latencies are the window's.
	tests := map[string]struct {
		runID, wantRunID, wantCommit string
		want                         WorkloadReport
	}{
		"latest invocation": {
			wantRunID: "20261202T100000", wantCommit: "def5678",
			want: WorkloadReport{
				Name: saturation.ID(), Nodes: 500,
				Vanilla:         Sample{Throughput: 30.03, P50: 70, P99: 450, AlgorithmP50: 2, AlgorithmP99: 30, BindingP99: 160, PodWritesPerPod: 4.5, AttemptsPerPod: 4.309, Batched: 0.75, HintedAttempts: 1500, Windowed: true},
				Tandem:          Sample{Throughput: 21.587, P50: 70, P99: 450, AlgorithmP50: 2, AlgorithmP99: 30, BindingP99: 160, PodWritesPerPod: 4.5, AttemptsPerPod: 2.616, Batched: 0.75, HintedAttempts: 1500, Windowed: true},
				ThroughputRatio: 0.719, P99LatencyRatio: 1, AlgorithmP99Ratio: 1, Repetitions: 1, MaxLoad1: 11.66,
				// One repetition makes no interval.
				ThroughputVerdict: NotEstablished, P99LatencyVerdict: NotEstablished, Verdict: NotEstablished,
			},
		},
		"an earlier invocation, named": {
			runID: "20261201T110000", wantRunID: "20261201T110000", wantCommit: "abc1234",
			want: WorkloadReport{
				Name: churn.ID(), Nodes: 500,
				Vanilla:         Sample{Throughput: 87.832, P50: 70, P99: 450, AlgorithmP50: 2, AlgorithmP99: 30, BindingP99: 160, PodWritesPerPod: 4.5, AttemptsPerPod: 1, Batched: 0.75, HintedAttempts: 1500, Windowed: true},
				Tandem:          Sample{Throughput: 71.027, P50: 70, P99: 450, AlgorithmP50: 2, AlgorithmP99: 30, BindingP99: 160, PodWritesPerPod: 4.5, AttemptsPerPod: 1, Batched: 0.75, HintedAttempts: 1500, Windowed: true},
				ThroughputRatio: 0.809, P99LatencyRatio: 1, AlgorithmP99Ratio: 1, Repetitions: 1, MaxLoad1: 13.27,
				ThroughputVerdict: NotEstablished, P99LatencyVerdict: NotEstablished, Verdict: NotEstablished,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			results, runID, commit, err := ReadResults(dir, tc.runID)
			if err != nil {
				t.Fatal(err)
			}
			if runID != tc.wantRunID || commit != tc.wantCommit || len(results) != 2 {
				t.Fatalf("read %d runs of invocation %q at %q; want 2 of %q at %q", len(results), runID, commit, tc.wantRunID, tc.wantCommit)
			}
			got := Aggregate([]Workload{churn, saturation}, results, time.Now(), 2)
			if diff := cmp.Diff([]WorkloadReport{tc.want}, got.Workloads, cmpopts.IgnoreFields(WorkloadReport{}, "Runs", "SLIP99Ratio")); diff != "" {
				t.Errorf("report (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestReadProgressName(t *testing.T) {
	k, _, err := readProgress(filepath.Join("testdata", "runs", "r01-2-SaturationTandem-500Nodes_2000Pairs_1000Waiting",
		"SaturationTandem_500Nodes_2000Pairs_1000Waiting_tandem_2026-12-01T11:06:02Z.dat"))
	if err != nil {
		t.Fatal(err)
	}
	if k != "SaturationTandem/500Nodes_2000Pairs_1000Waiting" {
		t.Errorf("key = %q", k)
	}
	if _, _, err := readProgress("other.dat"); err == nil {
		t.Error("a file not named like scheduler_perf's progress files was accepted")
	}
}
