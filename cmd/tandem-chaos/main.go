// Command tandem-chaos runs the simulator's chaos scenario
// (test/scenarios/chaos.yaml) against the tandem-scheduler binary on a local
// etcd + kube-apiserver while it injects faults (harness/sim/chaos), prints the
// summary and writes report.json. It exits non-zero when a job was lost, the
// invariant was violated, a reservation leaked, or a planned fault was not
// injected.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/sim/chaos"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

func main() {
	klog.InitFlags(nil)
	_ = flag.Set("logtostderr", "false")
	_ = flag.Set("stderrthreshold", "FATAL")
	scenarioFile := flag.String("scenario", "test/scenarios/chaos.yaml", "scenario file (with a chaos section)")
	jobs := flag.Int("jobs", 0, "generated jobs per run (0: the scenario's)")
	seed := flag.Int64("seed", 0, "job and fault seed (0: the scenario's)")
	timeScale := flag.Float64("time-scale", 0, "simulated seconds per real second (0: the scenario's)")
	out := flag.String("out", "_output/chaos", "directory for report.json, scheduler logs (logs/<run>/) and the control plane's (controlplane/)")
	timeout := flag.Duration("timeout", 30*time.Minute, "real-time limit per run")
	binary := flag.String("scheduler", "bin/tandem-scheduler", "tandem-scheduler binary")
	verbosity := flag.Int("scheduler-v", 4, "the schedulers' log verbosity (-v)")
	runs := flag.String("runs", "", "comma-separated runs of the scenario to run (default: all)")
	var override chaos.Override
	counts := map[string]**int{
		"kills": &override.Kills, "leader-kills": &override.LeaderKills, "apiserver-restarts": &override.APIServerRestarts,
		"runner-failures": &override.RunnerFailures, "node-deletions": &override.NodeDeletions,
	}
	values := map[string]*int{}
	for name := range counts {
		values[name] = flag.Int(name, -1, "replaces the scenario's count of "+name+" in the runs that have them (-1: the scenario's)")
	}
	flag.Parse()
	// The harness's own log (job outcomes at -v=2) goes next to the report.
	if f := flag.Lookup("log_file"); f != nil && f.Value.String() == "" {
		_ = os.MkdirAll(*out, 0o755)
		_ = os.Remove(filepath.Join(*out, "sim.log")) // klog appends
		_ = flag.Set("log_file", filepath.Join(*out, "sim.log"))
		if v := flag.Lookup("v"); v != nil && v.Value.String() == "0" {
			_ = flag.Set("v", "2")
		}
	}
	for name, v := range values {
		if *v >= 0 {
			*counts[name] = v
		}
	}
	opts := chaos.Options{
		Binary: *binary, Verbosity: *verbosity, Jobs: *jobs, Seed: *seed, TimeScale: *timeScale,
		Timeout: *timeout, Override: override, Progress: os.Stdout, LogDir: filepath.Join(*out, "logs"),
	}
	if *runs != "" {
		opts.Runs = strings.Split(*runs, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *scenarioFile, *out, opts)
	stop()
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tandem-chaos:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, file, out string, opts chaos.Options) error {
	sc, err := scenario.Load(file)
	if err != nil {
		return err
	}
	if opts.Binary, err = filepath.Abs(opts.Binary); err != nil {
		return err
	}
	if _, err := os.Stat(opts.Binary); err != nil {
		return fmt.Errorf("%w (run `make build`)", err)
	}
	// Fresh each time, kept afterwards: the apiserver's and etcd's logs.
	cpDir := filepath.Join(out, "controlplane")
	if err := os.RemoveAll(cpDir); err != nil {
		return err
	}
	if err := os.RemoveAll(opts.LogDir); err != nil {
		return err
	}
	started := time.Now()
	fmt.Printf("Scenario %s: %s\nStarting etcd and kube-apiserver on loopback ...\n", sc.Name, sc.Description)
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: cpDir})
	if err != nil {
		return err
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "tandem-chaos: stopping the control plane:", err)
		}
	}()
	rep, err := chaos.Run(ctx, cp, sc, opts)
	if err != nil {
		return err
	}
	fmt.Printf("\nSeed %d, time scale %gx; fault times in simulated seconds, recovery times in real seconds.\n\n", rep.Seed, rep.TimeScale)
	chaos.PrintSummary(os.Stdout, rep)
	path := filepath.Join(out, "report.json")
	if err := chaos.WriteJSON(path, rep); err != nil {
		return err
	}
	fmt.Printf("\nJSON: %s\nScheduler logs: %s\nTotal %s.\n", path, opts.LogDir, time.Since(started).Round(time.Second))
	if problems := rep.Problems(); len(problems) > 0 {
		return fmt.Errorf("the chaos run found problems:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}
