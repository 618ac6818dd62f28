// Command bench-cycle summarises BenchmarkCycle (pkg/workflowreservation):
// per case, the median of the runs' paired tandem/vanilla ratios with its
// distribution-free interval (at least 90% coverage) and the verdict against
// the per-cycle target. It reads go test -bench output, writes the summary
// as JSON and prints it, and fails when a case has not -runs runs.
// hack/bench-cycle.sh runs the benchmark and calls it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/tandem-scheduler/tandem/test/bench/compare"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-cycle:", err)
		os.Exit(1)
	}
}

func run() error {
	in := flag.String("in", "", "go test -bench output of BenchmarkCycle")
	out := flag.String("json", "", "where to write the summary")
	want := flag.Int("runs", 0, "the runs (-count) every case must have; 0: any")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	cases, err := compare.ParseCycle(f)
	if err != nil {
		return err
	}
	if len(cases) == 0 {
		return fmt.Errorf("%s holds no BenchmarkCycle results", *in)
	}
	report := compare.CycleReport{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Cases: cases}
	if *out != "" {
		data, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	if err := report.WriteTable(os.Stdout); err != nil {
		return err
	}
	if *want > 0 {
		return compare.CheckRuns(cases, *want)
	}
	return nil
}
