package compare

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// testdata/runs holds four recorded runs (Churn and Saturation at 500 nodes,
// both sides, one repetition) as bench-scheduler left them: result.json,
// scheduler_perf's data items and progress samples.
func TestReadResultsRecorded(t *testing.T) {
	results, err := ReadResults(filepath.Join("testdata", "runs"))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 {
		t.Fatalf("results = %d, want 4", len(results))
	}
	churn := Workload{Base: "Churn", Name: "500Nodes_2000Pairs_4Rounds", Nodes: 500}
	saturation := Workload{Base: "Saturation", Name: "500Nodes_2000Pairs_1000Waiting", Nodes: 500}
	got := Aggregate([]Workload{churn, saturation}, results, time.Now(), 2)

	// Values read off the recorded files by hand: SchedulingThroughput's
	// Average, attempt_duration{result=scheduled} Perc50/Perc99, and
	// attempts per bound pod between the first and last progress sample,
	// e.g. (7811-2636)/(4487-2509) = 2.616 for Saturation's tandem side.
	want := []WorkloadReport{{
		Name:  churn.ID(),
		Nodes: 500,
		Vanilla: Sample{
			Throughput: 87.832, P50: 206.932, P99: 1551.464, AlgorithmP50: 2.821, AlgorithmP99: 113.27,
			SLIP50: 702.543, SLIP99: 2523.692, AttemptsPerPod: 1,
		},
		Tandem: Sample{
			Throughput: 71.027, P50: 273.908, P99: 1455.703, AlgorithmP50: 2.247, AlgorithmP99: 191.017,
			SLIP50: 1886.159, SLIP99: 5037.136, AttemptsPerPod: 1,
		},
		ThroughputRatio: 0.809, P99LatencyRatio: 0.938, AlgorithmP99Ratio: 1.686, SLIP99Ratio: 1.996,
		Repetitions: 1, MaxLoad1: 13.27,
		// One repetition makes no interval.
		ThroughputVerdict: NotEstablished, P99LatencyVerdict: NotEstablished, Verdict: NotEstablished,
	}, {
		Name:  saturation.ID(),
		Nodes: 500,
		Vanilla: Sample{
			Throughput: 30.03, P50: 81.83, P99: 501.433, AlgorithmP50: 2.921, AlgorithmP99: 31.142,
			SLIP50: 2475.83, SLIP99: 27535.69, UnschedulableP99: 25.038, AttemptsPerPod: 4.309,
		},
		Tandem: Sample{
			Throughput: 21.587, P50: 100.567, P99: 934.512, AlgorithmP50: 5.776, AlgorithmP99: 68.408,
			SLIP50: 9842.567, SLIP99: 78244.25, UnschedulableP99: 63.665, AttemptsPerPod: 2.616,
		},
		ThroughputRatio: 0.719, P99LatencyRatio: 1.864, AlgorithmP99Ratio: 2.197, SLIP99Ratio: 2.842,
		Repetitions: 1, MaxLoad1: 11.66,
		ThroughputVerdict: NotEstablished, P99LatencyVerdict: NotEstablished, Verdict: NotEstablished,
	}}
	if diff := cmp.Diff(want, got.Workloads, cmpopts.IgnoreFields(WorkloadReport{}, "Runs")); diff != "" {
		t.Errorf("report (-want,+got):\n%s", diff)
	}
	if first := got.Workloads[0].Runs[0].First; first != Tandem {
		t.Errorf("churn repetition 1 ran %s first, want %s", first, Tandem)
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
