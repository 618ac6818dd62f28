package compare

import (
	"fmt"
	"math"
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

// The interval of a median is distribution-free: the order statistics
// x(k) and x(n+1-k) of n independent repetitions bracket the population
// median unless at least n+1-k of them fall on one side of it, so they
// cover it with probability 1 - 2 P(Binomial(n, 1/2) <= k-1), whatever the
// ratios' distribution. medianInterval takes the largest k (the narrowest
// such interval) whose coverage is at least IntervalLevel. Fewer than
// MinIntervalReps repetitions cannot reach it (with 4, min and max cover
// 87.5%; with 3, 75%), and make no interval: the verdict is then "not
// established", whatever the median.
const (
	// IntervalLevel is the least coverage of an interval.
	IntervalLevel = 0.90
	// MinIntervalReps is the fewest repetitions that make an interval.
	MinIntervalReps = 5
)

// medianInterval returns the interval of the median of xs (the paired
// per-repetition ratios) that covers it with probability at least
// IntervalLevel, that probability, and false for fewer than
// MinIntervalReps values.
func medianInterval(xs []float64) (Interval, float64, bool) {
	n := len(xs)
	k, coverage := orderStatistic(n)
	if k == 0 {
		return Interval{}, 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Interval{Low: round(s[k-1]), High: round(s[n-k])}, coverage, true
}

// orderStatistic returns, for n repetitions, the largest k for which
// [x(k), x(n+1-k)] covers the median with probability at least
// IntervalLevel, and that probability; 0 if even k = 1 does not.
func orderStatistic(n int) (int, float64) {
	best, coverage := 0, 0.0
	// tail is P(Binomial(n, 1/2) <= k-1), accumulated as k grows.
	tail, term := 0.0, math.Pow(0.5, float64(n))
	for k := 1; 2*k <= n+1; k++ {
		tail += term
		term = term * float64(n-(k-1)) / float64(k)
		c := 1 - 2*tail
		if c < IntervalLevel {
			break
		}
		best, coverage = k, c
	}
	return best, coverage
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
