package compare

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// Result is a finished run and what it measured.
type Result struct {
	Run
	// Sample is nil when the run failed or measured nothing.
	Sample *Sample
	// Order is the run's position in its pair: 1 or 2.
	Order int
	// MaxLoad1 is the highest 1-minute load average seen during the run.
	MaxLoad1 float64
	Start    time.Time
	Duration time.Duration
	// Err is why the run failed, empty if it did not.
	Err string
}

// Report is the comparison, as written to scheduler.json.
type Report struct {
	Date string `json:"date"`
	CPUs int    `json:"cpus"`
	// RunID and Commit name the invocation whose runs the report compares
	// and the source it measured.
	RunID     string           `json:"runID,omitempty"`
	Commit    string           `json:"commit,omitempty"`
	Workloads []WorkloadReport `json:"workloads"`
}

// WorkloadReport compares one workload's two sides. Side values are
// medians over the repetitions; a ratio is tandem / vanilla, the median of
// the per-repetition ratios (the two sides of a repetition ran back to
// back); a spread is (max - min) / median of those per-repetition ratios;
// an interval is the distribution-free interval of that median with at
// least 90% coverage (medianInterval, at least MinIntervalReps
// repetitions), and the verdicts judge the intervals against
// ThroughputTarget and P99LatencyTarget.
type WorkloadReport struct {
	Name    string `json:"name"`
	Nodes   int    `json:"nodes"`
	Vanilla Sample `json:"vanilla"`
	Tandem  Sample `json:"tandem"`

	ThroughputRatio float64 `json:"throughputRatio"`
	P99LatencyRatio float64 `json:"p99LatencyRatio"`
	// Repetitions counts the repetitions in which both sides measured.
	Repetitions int `json:"repetitions"`
	// Spread is the spread of the per-repetition throughput ratios.
	Spread float64 `json:"spread"`

	P99LatencyRatioSpread float64 `json:"p99LatencyRatioSpread"`

	// ThroughputInterval and P99LatencyInterval are nil with fewer than
	// MinIntervalReps repetitions; IntervalCoverage is the probability that
	// each covers its median.
	ThroughputInterval *Interval `json:"throughputRatioInterval,omitempty"`
	P99LatencyInterval *Interval `json:"p99LatencyRatioInterval,omitempty"`
	IntervalCoverage   float64   `json:"intervalCoverage,omitempty"`
	// ThroughputVerdict and P99LatencyVerdict are Met, NotMet or
	// NotEstablished; Verdict combines them: NotMet if either is, Met if
	// both are.
	ThroughputVerdict string `json:"throughputVerdict"`
	P99LatencyVerdict string `json:"p99LatencyVerdict"`
	Verdict           string `json:"verdict"`

	AlgorithmP99Ratio  float64 `json:"algorithmP99Ratio"`
	AlgorithmP99Spread float64 `json:"algorithmP99RatioSpread"`
	SLIP99Ratio        float64 `json:"sliP99Ratio"`
	// Failed counts runs that failed or measured nothing.
	Failed int `json:"failed,omitempty"`
	// MaxLoad1 is the highest 1-minute load average during its runs.
	MaxLoad1 float64 `json:"maxLoad1"`
	// Runs are the per-repetition values behind the medians.
	Runs []RepReport `json:"runs"`
}

// RepReport is one repetition of a workload.
type RepReport struct {
	Rep int `json:"rep"`
	// First is the side that ran first.
	First           string  `json:"first"`
	Vanilla         *Sample `json:"vanilla,omitempty"`
	Tandem          *Sample `json:"tandem,omitempty"`
	ThroughputRatio float64 `json:"throughputRatio,omitempty"`
	P99LatencyRatio float64 `json:"p99LatencyRatio,omitempty"`
	MaxLoad1        float64 `json:"maxLoad1"`
}

// Aggregate builds the report from results, workloads in the order given.
func Aggregate(workloads []Workload, results []Result, date time.Time, cpus int) Report {
	r := Report{Date: date.Format("2006-01-02"), CPUs: cpus}
	for _, w := range workloads {
		wr := WorkloadReport{Name: w.ID(), Nodes: w.Nodes}
		reps := map[int]*RepReport{}
		for _, res := range results {
			if res.Workload.ID() != w.ID() {
				continue
			}
			wr.MaxLoad1 = math.Max(wr.MaxLoad1, res.MaxLoad1)
			if res.Sample == nil {
				wr.Failed++
			}
			rr := reps[res.Rep]
			if rr == nil {
				rr = &RepReport{Rep: res.Rep}
				reps[res.Rep] = rr
			}
			if res.Order == 1 {
				rr.First = res.Side
			}
			rr.MaxLoad1 = math.Max(rr.MaxLoad1, res.MaxLoad1)
			if res.Side == Vanilla {
				rr.Vanilla = res.Sample
			} else {
				rr.Tandem = res.Sample
			}
		}
		if len(reps) == 0 {
			continue
		}
		var v, t []Sample
		var throughput, p99, algorithm, sli []float64
		for _, n := range slices.Sorted(maps.Keys(reps)) {
			rr := reps[n]
			wr.Runs = append(wr.Runs, *rr)
			if rr.Vanilla == nil || rr.Tandem == nil {
				continue
			}
			wr.Repetitions++
			v, t = append(v, *rr.Vanilla), append(t, *rr.Tandem)
			last := &wr.Runs[len(wr.Runs)-1]
			if x, ok := ratio(rr.Tandem.Throughput, rr.Vanilla.Throughput); ok {
				throughput = append(throughput, x)
				last.ThroughputRatio = round(x)
			}
			if x, ok := ratio(rr.Tandem.P99, rr.Vanilla.P99); ok {
				p99 = append(p99, x)
				last.P99LatencyRatio = round(x)
			}
			if x, ok := ratio(rr.Tandem.AlgorithmP99, rr.Vanilla.AlgorithmP99); ok {
				algorithm = append(algorithm, x)
			}
			if x, ok := ratio(rr.Tandem.SLIP99, rr.Vanilla.SLIP99); ok {
				sli = append(sli, x)
			}
		}
		wr.Vanilla, wr.Tandem = medianSample(v), medianSample(t)
		wr.ThroughputRatio, wr.Spread = round(median(throughput)), round(spread(throughput))
		wr.P99LatencyRatio, wr.P99LatencyRatioSpread = round(median(p99)), round(spread(p99))
		wr.AlgorithmP99Ratio, wr.AlgorithmP99Spread = round(median(algorithm)), round(spread(algorithm))
		wr.SLIP99Ratio = round(median(sli))
		wr.judge(throughput, p99)
		r.Workloads = append(r.Workloads, wr)
	}
	return r
}

// judge sets the intervals and verdicts from the per-repetition ratios.
func (wr *WorkloadReport) judge(throughput, p99 []float64) {
	t, coverage, tok := medianInterval(throughput)
	l, _, lok := medianInterval(p99)
	if tok {
		wr.ThroughputInterval, wr.IntervalCoverage = &t, round(coverage)
	}
	if lok {
		wr.P99LatencyInterval = &l
	}
	wr.ThroughputVerdict = verdictAtLeast(t, tok, ThroughputTarget)
	wr.P99LatencyVerdict = verdictAtMost(l, lok, P99LatencyTarget)
	switch {
	case wr.ThroughputVerdict == NotMet || wr.P99LatencyVerdict == NotMet:
		wr.Verdict = NotMet
	case wr.ThroughputVerdict == Met && wr.P99LatencyVerdict == Met:
		wr.Verdict = Met
	default:
		wr.Verdict = NotEstablished
	}
}

func ratio(a, b float64) (float64, bool) {
	if a <= 0 || b <= 0 {
		return 0, false
	}
	return a / b, true
}

// median of xs, 0 for none; the mean of the middle two for an even count.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread is (max - min) / median, 0 for fewer than two values.
func spread(xs []float64) float64 {
	m := median(xs)
	if len(xs) < 2 || m == 0 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / m
}

// medianSample takes the median of every field over the samples that
// measured it.
func medianSample(samples []Sample) Sample {
	field := func(get func(Sample) float64) float64 {
		var xs []float64
		for _, s := range samples {
			if x := get(s); x > 0 {
				xs = append(xs, x)
			}
		}
		return round(median(xs))
	}
	return Sample{
		Throughput:         field(func(s Sample) float64 { return s.Throughput }),
		P50:                field(func(s Sample) float64 { return s.P50 }),
		P99:                field(func(s Sample) float64 { return s.P99 }),
		AlgorithmP50:       field(func(s Sample) float64 { return s.AlgorithmP50 }),
		AlgorithmP99:       field(func(s Sample) float64 { return s.AlgorithmP99 }),
		SLIP50:             field(func(s Sample) float64 { return s.SLIP50 }),
		SLIP99:             field(func(s Sample) float64 { return s.SLIP99 }),
		UnschedulableP99:   field(func(s Sample) float64 { return s.UnschedulableP99 }),
		AttemptsPerPod:     field(func(s Sample) float64 { return s.AttemptsPerPod }),
		BindingP99:         field(func(s Sample) float64 { return s.BindingP99 }),
		PodWritesPerPod:    field(func(s Sample) float64 { return s.PodWritesPerPod }),
		Batched:            field(func(s Sample) float64 { return s.Batched }),
		HintedAttempts:     field(func(s Sample) float64 { return s.HintedAttempts }),
		PlaceholderRunners: field(func(s Sample) float64 { return s.PlaceholderRunners }),
		PlaceholderP50:     median(mapSamples(placeholderSamples(samples), func(s Sample) float64 { return s.PlaceholderP50 })),
		PlaceholderP99:     median(mapSamples(placeholderSamples(samples), func(s Sample) float64 { return s.PlaceholderP99 })),
		// The worst repetition's: one runner without its placeholder is
		// one too many.
		PlaceholdersMissing: slices.Max(append([]float64{0}, mapSamples(samples, func(s Sample) float64 { return s.PlaceholdersMissing })...)),
		Windowed:            len(samples) > 0 && !slices.ContainsFunc(samples, func(s Sample) bool { return !s.Windowed }),
	}
}

// round keeps three decimals: more would be noise.
func round(x float64) float64 { return math.Round(x*1000) / 1000 }

// WriteTable prints the report as two tables: throughput and attempt
// latency with their ratios, then the algorithm and SLI latencies.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "workload\treps\tvanilla pods/s\ttandem pods/s\tthroughput ratio\t≥90%% interval\tspread\tvanilla p50/p99 ms\ttandem p50/p99 ms\tp99 ratio\t≥90%% interval\tspread\tverdict (>= %.2f, <= %.2f)\tmax load\t\n",
		ThroughputTarget, P99LatencyTarget)
	for _, wr := range r.Workloads {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.3f\t%s\t%.2f\t%s\t%s\t%.3f\t%s\t%.2f\t%s\t%.1f\t\n", wr.Name, wr.Repetitions,
			wr.Vanilla.Throughput, wr.Tandem.Throughput, wr.ThroughputRatio, wr.ThroughputInterval, wr.Spread,
			pair(wr.Vanilla.P50, wr.Vanilla.P99), pair(wr.Tandem.P50, wr.Tandem.P99), wr.P99LatencyRatio, wr.P99LatencyInterval,
			wr.P99LatencyRatioSpread, wr.Verdict, wr.MaxLoad1)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "workload\tvanilla algorithm p50/p99 ms\ttandem algorithm p50/p99 ms\talgorithm p99 ratio\tspread\tvanilla SLI p50/p99 ms\ttandem SLI p50/p99 ms\tattempts/pod v/t\tapiserver binding p99 ms v/t\tpod writes/pod v/t\tbatched v/t\ttandem placeholder p50/p99 ms (missing)\tfailed runs\t\n")
	for _, wr := range r.Workloads {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", wr.Name,
			pair(wr.Vanilla.AlgorithmP50, wr.Vanilla.AlgorithmP99), pair(wr.Tandem.AlgorithmP50, wr.Tandem.AlgorithmP99),
			wr.AlgorithmP99Ratio, wr.AlgorithmP99Spread,
			pair(wr.Vanilla.SLIP50, wr.Vanilla.SLIP99), pair(wr.Tandem.SLIP50, wr.Tandem.SLIP99),
			pair(wr.Vanilla.AttemptsPerPod, wr.Tandem.AttemptsPerPod), pair(wr.Vanilla.BindingP99, wr.Tandem.BindingP99),
			pair(wr.Vanilla.PodWritesPerPod, wr.Tandem.PodWritesPerPod), pair(wr.Vanilla.Batched, wr.Tandem.Batched),
			placeholderTimes(wr.Tandem), wr.Failed)
	}
	return tw.Flush()
}

// placeholderTimes prints a side's time to placeholder, "-" where it has
// none (reservationMode Memory).
func placeholderTimes(s Sample) string {
	if s.PlaceholderRunners == 0 {
		return "-"
	}
	ms := func(x float64) string { return fmt.Sprintf("%.0f", x) }
	return fmt.Sprintf("%s / %s (%.0f of %.0f)", ms(s.PlaceholderP50), ms(s.PlaceholderP99), s.PlaceholdersMissing, s.PlaceholderRunners)
}

// placeholderSamples are the samples that measured a time to placeholder
// (zero times count: a placeholder seen before its runner bound).
func placeholderSamples(samples []Sample) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.PlaceholderRunners > 0 {
			out = append(out, s)
		}
	}
	return out
}

// mapSamples applies get to every sample.
func mapSamples(samples []Sample, get func(Sample) float64) []float64 {
	out := make([]float64, len(samples))
	for i, s := range samples {
		out[i] = get(s)
	}
	return out
}

// pair prints "a / b" with a precision that suits the values.
func pair(a, b float64) string {
	f := func(x float64) string {
		switch {
		case x == 0:
			return "-"
		case x < 10:
			return fmt.Sprintf("%.2f", x)
		default:
			return fmt.Sprintf("%.0f", x)
		}
	}
	return f(a) + " / " + f(b)
}
