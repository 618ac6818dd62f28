package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMedianIntervalNeedsEnoughRepetitions(t *testing.T) {
	for n := 1; n < MinIntervalReps; n++ {
		if _, _, ok := medianInterval(slices.Repeat([]float64{1}, n)); ok {
			t.Errorf("%d repetitions gave an interval; want none below %d (min and max of 4 cover the median 87.5%% of the time)", n, MinIntervalReps)
		}
	}
	tests := map[int]struct {
		k        int
		coverage float64
	}{
		5:  {1, 0.9375},
		6:  {1, 0.96875},
		7:  {1, 0.984375},
		8:  {2, 0.9296875},
		10: {2, 0.978515625},
		20: {6, 0.958610535},
	}
	for n, want := range tests {
		k, coverage := orderStatistic(n)
		if k != want.k || math.Abs(coverage-want.coverage) > 1e-6 {
			t.Errorf("n=%d: order statistic %d covering %.6f, want %d covering %.6f", n, k, coverage, want.k, want.coverage)
		}
	}
}

// The interval covers the median as often as it says, whatever the
// distribution: drawn from a skewed one with a known median, for every
// number of repetitions from 5 to 12.
func TestMedianIntervalCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 20000
	// exp(N(0, 0.1)) + 0.9: skewed, median exp(0) + 0.9 = 1.9.
	const trueMedian = 1.9
	for n := MinIntervalReps; n <= 12; n++ {
		covered := 0
		_, want := orderStatistic(n)
		xs := make([]float64, n)
		for range trials {
			for i := range xs {
				xs[i] = math.Exp(rng.NormFloat64()*0.1) + 0.9
			}
			iv, coverage, ok := medianInterval(xs)
			if !ok || coverage != round(want) && coverage != want {
				t.Fatalf("n=%d: interval %v, coverage %v, ok %t; want coverage %v", n, &iv, coverage, ok, want)
			}
			if iv.Low <= trueMedian && trueMedian <= iv.High {
				covered++
			}
		}
		got := float64(covered) / trials
		// Three standard errors of a proportion of 20,000 trials.
		se := math.Sqrt(want * (1 - want) / trials)
		if got < IntervalLevel-3*se || math.Abs(got-want) > 3*se+0.002 {
			t.Errorf("n=%d: covered the median in %.4f of the trials; the interval says %.4f, and at least %.2f", n, got, want, IntervalLevel)
		}
	}
}

func TestMedianIntervalIsTheOrderStatistics(t *testing.T) {
	// Eight ratios: x(2) and x(7) of the sorted values.
	xs := []float64{1.2, 0.91, 1.05, 0.95, 1.0, 0.97, 1.01, 0.99}
	iv, _, ok := medianInterval(xs)
	if !ok || iv != (Interval{Low: 0.95, High: 1.05}) {
		t.Errorf("interval %v (ok %t), want [0.95, 1.05]", &iv, ok)
	}
	if iv, _, _ := medianInterval([]float64{0.97, 0.97, 0.97, 0.97, 0.97}); iv != (Interval{Low: 0.97, High: 0.97}) {
		t.Errorf("equal ratios: interval %v, want [0.97, 0.97]", &iv)
	}
}

func TestVerdicts(t *testing.T) {
	tests := map[string]struct {
		throughput, p99                  []float64
		wantThroughput, wantP99, wantAll string
	}{
		"both met": {
			throughput: []float64{0.98, 0.99, 1.0, 1.01, 0.97}, p99: []float64{1.0, 1.02, 0.98, 1.05, 1.01},
			wantThroughput: Met, wantP99: Met, wantAll: Met,
		},
		"throughput not met": {
			throughput: []float64{0.85, 0.88, 0.9, 0.86, 0.87}, p99: []float64{1.0, 1.02, 0.98, 1.05, 1.01},
			wantThroughput: NotMet, wantP99: Met, wantAll: NotMet,
		},
		"latency not met, throughput straddling": {
			throughput: []float64{0.9, 1.0, 0.93, 0.97, 0.99}, p99: []float64{1.3, 1.25, 1.4, 1.2, 1.35},
			wantThroughput: NotEstablished, wantP99: NotMet, wantAll: NotMet,
		},
		"straddling both": {
			throughput: []float64{0.85, 1.05, 0.95, 0.9, 1.0}, p99: []float64{0.9, 1.3, 1.1, 1.0, 1.2},
			wantThroughput: NotEstablished, wantP99: NotEstablished, wantAll: NotEstablished,
		},
		"a median that meets both, from two repetitions": {
			throughput: []float64{1.0, 1.0}, p99: []float64{1.0, 1.0},
			wantThroughput: NotEstablished, wantP99: NotEstablished, wantAll: NotEstablished,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var wr WorkloadReport
			wr.judge(tc.throughput, tc.p99)
			if wr.ThroughputVerdict != tc.wantThroughput || wr.P99LatencyVerdict != tc.wantP99 || wr.Verdict != tc.wantAll {
				t.Errorf("verdicts throughput %q (interval %v), p99 %q (interval %v), all %q; want %q, %q, %q",
					wr.ThroughputVerdict, wr.ThroughputInterval, wr.P99LatencyVerdict, wr.P99LatencyInterval, wr.Verdict,
					tc.wantThroughput, tc.wantP99, tc.wantAll)
			}
		})
	}
}
