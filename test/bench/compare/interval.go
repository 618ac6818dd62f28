package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// The cost targets tandem is judged on (docs/benchmarks.md): its throughput
// at least 0.95 of vanilla kube-scheduler's, its p99 scheduling latency at
// most 1.10 of vanilla's.
const (
	ThroughputTarget = 0.95
	P99LatencyTarget = 1.10
)

// Verdicts on a target, judged from the ratio's interval, not its median.
const (
	// Met: the whole interval is on the target's good side.
	Met = "met"
	// NotMet: the whole interval is on the wrong side.
	NotMet = "not met"
	// NotEstablished: the interval straddles the target, or there are too
	// few repetitions for one.
	NotEstablished = "not established"
)

// Interval is a confidence interval.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// String prints the interval as "[low, high]", "-" for none.
func (iv *Interval) String() string {
	if iv == nil {
		return "-"
	}
	return fmt.Sprintf("[%.3f, %.3f]", iv.Low, iv.High)
}

// bootstrapResamples and bootstrapLevel make the interval: the 5th and 95th
// percentiles of the medians of 10,000 resamples.
const (
	bootstrapResamples = 10000
	bootstrapLevel     = 0.90
	// minIntervalReps is the fewest paired repetitions an interval is made
	// from: with fewer, resamples repeat the same few values.
	minIntervalReps = 3
)

// bootstrapMedian returns the percentile bootstrap interval, at
// bootstrapLevel, of the median of xs (paired per-repetition ratios), and
// false for fewer than minIntervalReps values. The generator is seeded from
// the values, so the same runs always give the same interval.
func bootstrapMedian(xs []float64) (Interval, bool) {
	n := len(xs)
	if n < minIntervalReps {
		return Interval{}, false
	}
	var seed uint64
	for _, x := range xs {
		seed = seed*31 + math.Float64bits(x)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	medians := make([]float64, bootstrapResamples)
	sample := make([]float64, n)
	for i := range medians {
		for j := range sample {
			sample[j] = xs[rng.IntN(n)]
		}
		medians[i] = median(sample)
	}
	slices.Sort(medians)
	tail := (1 - bootstrapLevel) / 2
	at := func(q float64) float64 {
		return medians[min(int(q*float64(len(medians))), len(medians)-1)]
	}
	return Interval{Low: round(at(tail)), High: round(at(1 - tail))}, true
}

// verdictAtLeast judges an interval against a target the ratio must reach
// (throughput).
func verdictAtLeast(iv Interval, ok bool, target float64) string {
	switch {
	case !ok:
		return NotEstablished
	case iv.Low >= target:
		return Met
	case iv.High < target:
		return NotMet
	}
	return NotEstablished
}

// verdictAtMost judges an interval against a target the ratio must not
// exceed (latency).
func verdictAtMost(iv Interval, ok bool, target float64) string {
	switch {
	case !ok:
		return NotEstablished
	case iv.High <= target:
		return Met
	case iv.Low > target:
		return NotMet
	}
	return NotEstablished
}
