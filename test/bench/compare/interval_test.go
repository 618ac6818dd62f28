package compare

import (
	"testing"
)

func TestBootstrapMedian(t *testing.T) {
	if _, ok := bootstrapMedian([]float64{1, 1.1}); ok {
		t.Errorf("two ratios gave an interval; want none below %d", minIntervalReps)
	}
	// Nine ratios around 1.0: the interval holds the median and lies
	// within the range, strictly inside it at both ends (a resample's
	// median is rarely an extreme).
	xs := []float64{0.91, 0.95, 0.97, 0.99, 1.0, 1.01, 1.03, 1.05, 1.2}
	iv, ok := bootstrapMedian(xs)
	if !ok {
		t.Fatal("nine ratios gave no interval")
	}
	if !(iv.Low <= 1.0 && 1.0 <= iv.High) || iv.Low <= 0.91 || iv.High >= 1.2 {
		t.Errorf("interval %v: want it around the median 1.0, inside (0.91, 1.2)", &iv)
	}
	if again, _ := bootstrapMedian(xs); again != iv {
		t.Errorf("the same ratios gave %v then %v: want the same interval every time", &iv, &again)
	}
	// Equal ratios: no spread, the interval is the point.
	if iv, _ := bootstrapMedian([]float64{0.97, 0.97, 0.97}); iv != (Interval{Low: 0.97, High: 0.97}) {
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
