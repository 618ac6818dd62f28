package compare

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// The per-cycle targets (issue 23; docs/benchmarks.md): tandem's
// scheduling cycle at most 5% slower than vanilla's for a pod that is not a
// runner, at most 10% for a runner (it is filtered and scored with its
// workflow pod).
const (
	CyclePlainPodTarget = 1.05
	CycleRunnerTarget   = 1.10
)

// CycleReport is BenchmarkCycle's output (pkg/workflowreservation),
// summarised per case, as written to cycle.json.
type CycleReport struct {
	Date  string      `json:"date"`
	CPUs  int         `json:"cpus"`
	Cases []CycleCase `json:"cases"`
}

// CycleCase is one case over its runs (-count): medians, and the median of
// the runs' tandem/vanilla ratios (each paired within its run) with its
// distribution-free interval (at least 90% coverage, medianInterval) and the
// verdict it gives against Target.
type CycleCase struct {
	Name    string `json:"name"`
	Nodes   int    `json:"nodes"`
	Held    int    `json:"held"`
	Kind    string `json:"kind"`
	Profile string `json:"profile"`
	Runs    int    `json:"runs"`
	// Lost counts runs whose result line a log line split from the case's
	// name: they cannot be read, and CheckRuns reports them.
	Lost int `json:"lost,omitempty"`

	TandemNs      float64 `json:"tandemNsPerCycle"`
	VanillaNs     float64 `json:"vanillaNsPerCycle"`
	TandemAllocs  float64 `json:"tandemAllocsPerCycle"`
	VanillaAllocs float64 `json:"vanillaAllocsPerCycle"`

	Ratio         float64   `json:"ratio"`
	RatioInterval *Interval `json:"ratioInterval,omitempty"`
	// IntervalCoverage is the probability that RatioInterval covers the
	// median (at least IntervalLevel; medianInterval).
	IntervalCoverage float64 `json:"intervalCoverage,omitempty"`
	Target           float64 `json:"target"`
	Verdict          string  `json:"verdict"`
}

// cycleName is a case's name: BenchmarkCycle/<n>Nodes/<n>Held/<kind>/<profile>-<procs>.
var cycleName = regexp.MustCompile(`^BenchmarkCycle/(\d+)Nodes/(\d+)Held/(\w+)/([\w-]+?)(-\d+)?$`)

// ParseCycle reads go test -bench output and summarises BenchmarkCycle's
// cases, in the order they first appear.
func ParseCycle(r io.Reader) ([]CycleCase, error) {
	type runs struct {
		c                              CycleCase
		tandem, vanilla, ratio, ta, va []float64
	}
	var order []string
	byName := map[string]*runs{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkCycle/") {
			continue
		}
		m := cycleName.FindStringSubmatch(fields[0])
		if m == nil {
			return nil, fmt.Errorf("benchmark %q: not BenchmarkCycle/<n>Nodes/<n>Held/<kind>/<profile>", fields[0])
		}
		name := strings.TrimPrefix(fields[0], "BenchmarkCycle/")
		name = strings.TrimSuffix(name, m[5])
		rs := byName[name]
		if rs == nil {
			nodes, _ := strconv.Atoi(m[1])
			held, _ := strconv.Atoi(m[2])
			target := CycleRunnerTarget
			if m[3] != "Runner" {
				target = CyclePlainPodTarget
			}
			rs = &runs{c: CycleCase{Name: name, Nodes: nodes, Held: held, Kind: m[3], Profile: m[4], Target: target}}
			byName[name] = rs
			order = append(order, name)
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			// A log line printed between the name and the results (go
			// test prints them as they come): this run's result line lost
			// its name.
			rs.c.Lost++
			continue
		}
		metrics := map[string]float64{}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: value %q: %w", fields[0], fields[i], err)
			}
			metrics[fields[i+1]] = v
		}
		for _, unit := range []string{"ns/op", "vanilla-ns/op", "tandem/vanilla"} {
			if _, ok := metrics[unit]; !ok {
				return nil, fmt.Errorf("benchmark %s: no %s", fields[0], unit)
			}
		}
		rs.tandem = append(rs.tandem, metrics["ns/op"])
		rs.vanilla = append(rs.vanilla, metrics["vanilla-ns/op"])
		rs.ratio = append(rs.ratio, metrics["tandem/vanilla"])
		rs.ta = append(rs.ta, metrics["allocs/op"])
		rs.va = append(rs.va, metrics["vanilla-allocs/op"])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]CycleCase, 0, len(order))
	for _, name := range order {
		rs := byName[name]
		c := rs.c
		c.Runs = len(rs.ratio)
		c.TandemNs, c.VanillaNs = round(median(rs.tandem)), round(median(rs.vanilla))
		c.TandemAllocs, c.VanillaAllocs = round(median(rs.ta)), round(median(rs.va))
		c.Ratio = round(median(rs.ratio))
		iv, coverage, ok := medianInterval(rs.ratio)
		if ok {
			c.RatioInterval, c.IntervalCoverage = &iv, round(coverage)
		}
		c.Verdict = verdictAtMost(iv, ok, c.Target)
		out = append(out, c)
	}
	return out, nil
}

// CheckRuns reports every case that does not have want runs (-count), or
// lost one to a log line: a run that failed, or output of another -count.
func CheckRuns(cases []CycleCase, want int) error {
	var bad []string
	for _, c := range cases {
		if c.Runs != want || c.Lost > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d runs (%d lost to a log line), want %d", c.Name, c.Runs, c.Lost, want))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("cases without their runs:\n  %s", strings.Join(bad, "\n  "))
	}
	return nil
}

// WriteTable prints the cases, and per verdict how many.
func (r CycleReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "case\truns\tvanilla µs\ttandem µs\ttandem/vanilla\t≥90%% interval\ttarget\tverdict\tvanilla allocs\ttandem allocs\t\n")
	verdicts := map[string]int{}
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.3f\t%s\t%.2f\t%s\t%.0f\t%.0f\t\n", c.Name, c.Runs,
			c.VanillaNs/1000, c.TandemNs/1000, c.Ratio, c.RatioInterval, c.Target, c.Verdict, c.VanillaAllocs, c.TandemAllocs)
		verdicts[c.Verdict]++
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var parts []string
	for _, v := range []string{Met, NotMet, NotEstablished} {
		parts = append(parts, fmt.Sprintf("%s %d", v, verdicts[v]))
	}
	_, err := fmt.Fprintf(w, "%d cases: %s\n", len(r.Cases), strings.Join(parts, ", "))
	return err
}
