package compare

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMedianAndSpread(t *testing.T) {
	tests := map[string]struct {
		xs                     []float64
		wantMedian, wantSpread float64
	}{
		"none":  {},
		"one":   {xs: []float64{2}, wantMedian: 2},
		"odd":   {xs: []float64{3, 1, 2}, wantMedian: 2, wantSpread: 1},
		"even":  {xs: []float64{4, 1, 3, 2}, wantMedian: 2.5, wantSpread: 1.2},
		"equal": {xs: []float64{5, 5}, wantMedian: 5},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := median(tc.xs); got != tc.wantMedian {
				t.Errorf("median = %v, want %v", got, tc.wantMedian)
			}
			if got := spread(tc.xs); got != tc.wantSpread {
				t.Errorf("spread = %v, want %v", got, tc.wantSpread)
			}
		})
	}
}

func TestAggregate(t *testing.T) {
	w := Workload{Base: "Runners", Name: "500Nodes", Nodes: 500}
	other := Workload{Base: "Plain", Name: "500Nodes", Nodes: 500}
	res := func(rep, order int, side string, s *Sample, load float64) Result {
		return Result{Run: Run{Rep: rep, Workload: w, Side: side}, Order: order, Sample: s, MaxLoad1: load}
	}
	results := []Result{
		res(1, 1, Vanilla, &Sample{Throughput: 100, P50: 10, P99: 40, AlgorithmP99: 2, BindingP99: 90, Windowed: true}, 1.5),
		res(1, 2, Tandem, &Sample{Throughput: 80, P50: 12, P99: 60, AlgorithmP99: 3, BindingP99: 150, Windowed: true}, 2),
		res(2, 1, Tandem, &Sample{Throughput: 90, P50: 11, P99: 44, AlgorithmP99: 2.5, BindingP99: 170, Windowed: true}, 3.5),
		res(2, 2, Vanilla, &Sample{Throughput: 100, P50: 10, P99: 40, AlgorithmP99: 2, BindingP99: 110, Windowed: true}, 1),
		res(3, 1, Vanilla, &Sample{Throughput: 120, P50: 9, P99: 30, AlgorithmP99: 2, BindingP99: 100, Windowed: true}, 1),
		res(3, 2, Tandem, &Sample{Throughput: 120, P50: 9, P99: 30, AlgorithmP99: 2, BindingP99: 160}, 1),
		// A failed repetition counts as failed, not in the medians.
		res(4, 1, Tandem, nil, 1),
		res(4, 2, Vanilla, &Sample{Throughput: 1000, P99: 1}, 1),
	}
	got := Aggregate([]Workload{w, other}, results, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 2)
	if len(got.Workloads) != 1 {
		t.Fatalf("workloads = %d, want 1 (the one without runs is left out)", len(got.Workloads))
	}
	wr := got.Workloads[0]
	wr.Runs = nil
	want := WorkloadReport{
		Name:    "Runners/500Nodes",
		Nodes:   500,
		Vanilla: Sample{Throughput: 100, P50: 10, P99: 40, AlgorithmP99: 2, BindingP99: 100, Windowed: true},
		// One tandem run lacked its window: the medians do not claim one.
		Tandem: Sample{Throughput: 90, P50: 11, P99: 44, AlgorithmP99: 2.5, BindingP99: 160},
		// Per repetition 0.8, 0.9, 1.0; p99 1.5, 1.1, 1.0; algorithm 1.5, 1.25, 1.
		ThroughputRatio:       0.9,
		Spread:                0.222,
		P99LatencyRatio:       1.1,
		P99LatencyRatioSpread: 0.455,
		AlgorithmP99Ratio:     1.25,
		AlgorithmP99Spread:    0.4,
		Repetitions:           3,
		Failed:                1,
		MaxLoad1:              3.5,
		// Three repetitions make no interval (min and max of three cover
		// the median 75% of the time): not established, whatever the median.
		ThroughputVerdict: NotEstablished,
		P99LatencyVerdict: NotEstablished,
		Verdict:           NotEstablished,
	}
	if diff := cmp.Diff(want, wr); diff != "" {
		t.Errorf("report (-want,+got):\n%s", diff)
	}
	if got.Date != "2026-12-01" || got.CPUs != 2 {
		t.Errorf("date, cpus = %s, %d", got.Date, got.CPUs)
	}
	runs := got.Workloads[0].Runs
	if len(runs) != 4 || runs[1].First != Tandem || runs[1].ThroughputRatio != 0.9 || runs[3].Tandem != nil {
		t.Errorf("runs = %+v", runs)
	}

	var table bytes.Buffer
	if err := got.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Runners/500Nodes", "0.900", "10 / 40", "11 / 44", "100 / 160", "not established"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
}
