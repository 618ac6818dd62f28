// Command bench-scheduler runs the scheduler_perf workloads of test/bench
// side by side, vanilla kube-scheduler and tandem, with a test binary of
// test/bench (one process per run, the two sides of a workload back to back
// in alternating order), then writes the comparison as JSON and prints it.
// hack/bench-scheduler.sh builds what it needs and calls it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"syscall"
	"time"

	"github.com/tandem-scheduler/tandem/test/bench/compare"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scheduler:", err)
		os.Exit(1)
	}
}

type options struct {
	binary, dir, out, jsonOut, only, profile string
	runID, commit                            string
	reps, repsLarge, largeNodes              int
	short, reportOnly                        bool
}

func run() error {
	var o options
	flag.StringVar(&o.binary, "binary", "", "test binary of test/bench (go test -c)")
	flag.StringVar(&o.dir, "dir", "test/bench", "the test/bench directory: performance-config.yaml and templates")
	flag.StringVar(&o.out, "out", "_output/bench/scheduler", "directory for the runs")
	flag.StringVar(&o.jsonOut, "json", "_output/bench/scheduler.json", "where to write the report")
	flag.IntVar(&o.reps, "reps", 7, "repetitions of each workload")
	flag.IntVar(&o.repsLarge, "reps-large", 5, "repetitions of workloads with at least -large-nodes nodes")
	flag.IntVar(&o.largeNodes, "large-nodes", 5000, "node count from which -reps-large applies")
	flag.StringVar(&o.only, "only", "", "run only workloads whose name (Base/Workload) matches this regexp")
	flag.BoolVar(&o.short, "short", false, "run the short variant of every workload once, in one process, and check that each measured")
	flag.BoolVar(&o.reportOnly, "report-only", false, "run nothing: rebuild the report from the runs in -out")
	flag.StringVar(&o.profile, "profile", "", "run the tandem side of this workload (Base/Workload) once with a CPU profile into -out")
	flag.StringVar(&o.runID, "run-id", "", "with -report-only: the invocation whose runs to read (its runID in result.json); default the latest")
	flag.StringVar(&o.commit, "commit", "", "the source measured (git describe), recorded with every run")
	flag.Parse()

	workloads, err := compare.LoadWorkloads(filepath.Join(o.dir, "performance-config.yaml"))
	if err != nil {
		return err
	}
	if o.only != "" {
		re, err := regexp.Compile(o.only)
		if err != nil {
			return fmt.Errorf("-only: %w", err)
		}
		var kept []compare.Workload
		for _, w := range workloads {
			if re.MatchString(w.ID()) {
				kept = append(kept, w)
			}
		}
		workloads = kept
	}
	if !o.reportOnly && o.binary == "" {
		return errors.New("-binary is required")
	}
	// The runs start in -dir: paths given relative to here must not move.
	for _, p := range []*string{&o.binary, &o.out} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return err
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runner := &compare.Runner{Binary: o.binary, Dir: o.dir, Out: o.out, Env: os.Environ(),
		RunID: time.Now().UTC().Format("20060102T150405"), Commit: o.commit}

	switch {
	case o.profile != "":
		return profile(ctx, runner, workloads, o.profile)
	case o.short:
		return short(ctx, runner, workloads, o.jsonOut)
	}
	var results []compare.Result
	runID, commit := runner.RunID, runner.Commit
	if o.reportOnly {
		if results, runID, commit, err = compare.ReadResults(o.out, o.runID); err != nil {
			return err
		}
		fmt.Printf("%d runs of invocation %s (commit %s)\n", len(results), runID, commit)
	} else {
		var full []compare.Workload
		for _, w := range workloads {
			if !w.Short {
				full = append(full, w)
			}
		}
		workloads = full
		if results, err = runAll(ctx, runner, compare.Plan(workloads, o.reps, o.repsLarge, o.largeNodes)); err != nil {
			return err
		}
	}
	r := compare.Aggregate(workloads, results, time.Now(), runtime.NumCPU())
	r.RunID, r.Commit = runID, commit
	return report(r, o.jsonOut)
}

// runAll runs the plan, printing a line per run.
func runAll(ctx context.Context, runner *compare.Runner, plan []compare.Run) ([]compare.Result, error) {
	start := time.Now()
	fmt.Printf("%d runs; each run's files in %s\n", len(plan), runner.Out)
	results := make([]compare.Result, 0, len(plan))
	for i, r := range plan {
		order := 1
		if i > 0 && plan[i-1].Rep == r.Rep && plan[i-1].Workload.ID() == r.Workload.ID() {
			order = 2
		}
		res := runner.Run(ctx, r, order)
		results = append(results, res)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		done := time.Since(start)
		left := time.Duration(float64(done) / float64(i+1) * float64(len(plan)-i-1))
		what := "failed: " + res.Err
		if res.Sample != nil {
			what = fmt.Sprintf("%.1f pods/s, attempt p99 %.1f ms, algorithm p99 %.2f ms", res.Sample.Throughput, res.Sample.P99, res.Sample.AlgorithmP99)
		}
		fmt.Printf("%s [%d/%d] rep %d %s: %s in %.0f s, load <= %.1f; about %s left\n", time.Now().Format("15:04:05"), i+1, len(plan),
			r.Rep, r.Workload.TestCase(r.Side)+"/"+r.Workload.Name, what, res.Duration.Seconds(), res.MaxLoad1, left.Round(time.Minute))
	}
	return results, nil
}

// short runs every short variant once and fails unless both sides of each
// measured a latency.
func short(ctx context.Context, runner *compare.Runner, workloads []compare.Workload, jsonOut string) error {
	start := time.Now()
	results, err := runner.RunAllShort(ctx, workloads)
	if err != nil {
		return err
	}
	var missing []string
	for _, res := range results {
		if res.Sample == nil || res.Sample.P99 == 0 {
			missing = append(missing, res.Workload.TestCase(res.Side)+"/"+res.Workload.Name)
		}
	}
	var short []compare.Workload
	for _, w := range workloads {
		if w.Short {
			short = append(short, w)
		}
	}
	if err := report(compare.Aggregate(short, results, time.Now(), runtime.NumCPU()), jsonOut); err != nil {
		return err
	}
	fmt.Printf("%d short workloads x 2 sides in %.0f s\n", len(short), time.Since(start).Seconds())
	if len(short) == 0 {
		return errors.New("no short workloads in the config")
	}
	if len(missing) > 0 {
		return fmt.Errorf("measured nothing: %v", missing)
	}
	return nil
}

// profile runs the tandem side of one workload with a CPU profile.
func profile(ctx context.Context, runner *compare.Runner, workloads []compare.Workload, id string) error {
	for _, w := range workloads {
		if w.ID() != id {
			continue
		}
		r := compare.Run{Rep: 1, Workload: w, Side: compare.Tandem}
		file, err := filepath.Abs(filepath.Join(runner.RunDir(r, 1), "cpu.pprof"))
		if err != nil {
			return err
		}
		res := runner.Run(ctx, r, 1, "-test.cpuprofile="+file)
		if res.Sample == nil {
			return errors.New(res.Err)
		}
		fmt.Printf("%s: %.1f pods/s, attempt p99 %.1f ms; CPU profile in %s\n", id, res.Sample.Throughput, res.Sample.P99, file)
		return nil
	}
	return fmt.Errorf("-profile: no workload %s", id)
}

func report(r compare.Report, jsonOut string) error {
	if err := r.WriteTable(os.Stdout); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(jsonOut), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(jsonOut, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", jsonOut)
	return nil
}
