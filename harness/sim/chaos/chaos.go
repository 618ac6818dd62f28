// Package chaos runs a simulator scenario (harness/sim) against the real
// tandem-scheduler binary, as separate processes, while it injects faults:
// scheduler processes killed with SIGKILL and started again, the leader of
// two replicas killed, kube-apiserver restarted, runner pods failed (ARC
// recreates them under the same name), and nodes deleted and replaced. The
// invariant checker watches all along; the report says which jobs failed
// because of a fault and which were lost, and how long scheduling was out
// after each fault. `make chaos` runs it through cmd/tandem-chaos.
package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
	"github.com/tandem-scheduler/tandem/harness/sim"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// Leader election timings of the runs with several replicas: short, for a
// fast failover (kube-scheduler's defaults are 15s, 10s, 2s).
const (
	LeaseDuration = 4 * time.Second
	RenewDeadline = 3 * time.Second
	RetryPeriod   = time.Second
)

// Options tune Run.
type Options struct {
	// Binary is the tandem-scheduler executable (required).
	Binary string
	// LogDir receives, per run, the scheduler configuration and each
	// replica's log (required).
	LogDir string
	// Verbosity is the schedulers' -v (default 2).
	Verbosity int
	// Jobs, if positive, replaces the number of generated jobs.
	Jobs int
	// Seed replaces the scenario's generator seed when not zero; it also
	// draws the faults.
	Seed int64
	// TimeScale replaces the scenario's when positive.
	TimeScale float64
	// Timeout bounds each run in real time (default 30m).
	Timeout time.Duration
	// StallTimeout ends a run early when no job ended and no pod came or
	// went for that long (real time; default 3m, while a job lasts seconds).
	StallTimeout time.Duration
	// Override replaces fault counts of the scenario (see Override).
	Override Override
	// Runs, if set, runs only these of the scenario's runs.
	Runs []string
	// Progress, if set, receives a line per fault and per run.
	Progress io.Writer
}

// Override replaces counts of the scenario's faults: a set field replaces
// the count of that kind in every run whose scenario asks for that kind at
// all; nil keeps the scenario's.
type Override struct {
	Kills, LeaderKills, APIServerRestarts, RunnerFailures, NodeDeletions *int
}

func (o Override) apply(f scenario.Faults) scenario.Faults {
	for _, p := range []struct {
		count *int
		with  *int
	}{
		{&f.Kills, o.Kills}, {&f.LeaderKills, o.LeaderKills}, {&f.APIServerRestarts, o.APIServerRestarts},
		{&f.RunnerFailures, o.RunnerFailures}, {&f.NodeDeletions, o.NodeDeletions},
	} {
		if *p.count > 0 && p.with != nil {
			*p.count = *p.with
		}
	}
	return f
}

// Run runs each of the scenario's chaos runs on cp, one after the other, and
// returns the report. It returns an error only when a run could not be set
// up; what a run finds (lost jobs, violations) is in the report.
func Run(ctx context.Context, cp *controlplane.ControlPlane, sc *scenario.Scenario, opts Options) (*Report, error) {
	if sc.Chaos == nil {
		return nil, fmt.Errorf("scenario %s has no chaos section", sc.Name)
	}
	if opts.Binary == "" || opts.LogDir == "" {
		return nil, fmt.Errorf("chaos: Binary and LogDir are required")
	}
	if opts.Verbosity == 0 {
		opts.Verbosity = 2
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Minute
	}
	if opts.StallTimeout == 0 {
		opts.StallTimeout = 3 * time.Minute
	}
	sc = withJobs(sc, opts.Jobs)
	seed := opts.Seed
	if seed == 0 && sc.Jobs.Generate != nil {
		seed = sc.Jobs.Generate.Seed
	}
	scale := sc.TimeScale
	if opts.TimeScale > 0 {
		scale = opts.TimeScale
	}
	started := time.Now()
	var runs []RunReport
	for i, spec := range sc.Chaos.Runs {
		if len(opts.Runs) > 0 && !slices.Contains(opts.Runs, spec.Name) {
			continue
		}
		spec.Faults = opts.Override.apply(spec.Faults)
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "Run %q: %d replica(s), leader election %v, %d jobs, faults %+v\n",
				spec.Name, max(spec.Replicas, 1), spec.LeaderElection, len(sc.Stream(seed)), spec.Faults)
		}
		run, err := runOne(ctx, cp, sc, spec, seed+int64(i), opts)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", spec.Name, err)
		}
		runs = append(runs, run)
	}
	return summarize(sc.Name, seed, scale, runs, time.Since(started)), nil
}

// withJobs returns sc with n generated jobs (sc itself if n is not positive).
func withJobs(sc *scenario.Scenario, n int) *scenario.Scenario {
	if n <= 0 || sc.Jobs.Generate == nil {
		return sc
	}
	out := *sc
	g := *sc.Jobs.Generate
	g.Count = n
	out.Jobs.Generate = &g
	return &out
}

func runOne(ctx context.Context, cp *controlplane.ControlPlane, sc *scenario.Scenario, spec scenario.ChaosRun, faultSeed int64, opts Options) (RunReport, error) {
	logger := klog.FromContext(ctx).WithValues("run", spec.Name)
	ctx = klog.NewContext(ctx, logger)
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	started := time.Now()
	h, err := sim.NewHarness(ctx, cp.RESTConfig(), sc, sim.Tandem, sim.Options{Seed: opts.Seed, TimeScale: opts.TimeScale})
	if err != nil {
		return RunReport{}, err
	}
	defer h.Close()
	logDir := filepath.Join(opts.LogDir, spec.Name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return RunReport{}, err
	}
	profile := inprocess.Profile{SchedulerName: sim.Tandem.SchedulerName(), Tandem: true, Scoring: sc.Scoring, BackoffSeconds: 1, Args: sim.TandemArgs(h.NoWorkflowPodGrace)}
	lease := ""
	if spec.LeaderElection {
		// A Lease of its own per run: a new run does not wait for the
		// last holder of an older run's lease.
		lease = h.Namespace
		profile.LeaderElection = &inprocess.LeaderElection{
			ResourceName: lease, ResourceNamespace: "kube-system",
			LeaseDuration: LeaseDuration, RenewDeadline: RenewDeadline, RetryPeriod: RetryPeriod,
		}
	}
	config := filepath.Join(logDir, "scheduler-config.yaml")
	if err := os.WriteFile(config, []byte(inprocess.Config(profile)), 0o644); err != nil {
		return RunReport{}, err
	}
	binds := newBindWatcher(sim.Tandem.SchedulerName())
	if err := binds.start(h.Factory); err != nil {
		return RunReport{}, err
	}
	minDelay, maxDelay := sc.Chaos.Delays()
	fleet, err := StartFleet(ctx, cp, FleetSpec{
		Binary: opts.Binary, Config: config, Replicas: spec.Replicas, Lease: lease, LogDir: logDir,
		Args: []string{fmt.Sprintf("-v=%d", opts.Verbosity)}, MinDelay: minDelay, MaxDelay: maxDelay, Seed: faultSeed,
	})
	if err != nil {
		return RunReport{}, err
	}
	defer fleet.Stop()
	if err := fleet.WaitReady(ctx, recoveryTimeout); err != nil {
		return RunReport{}, fmt.Errorf("schedulers not ready: %w", err)
	}

	var arrivals []time.Duration
	for _, a := range sc.Stream(h.Seed) {
		arrivals = append(arrivals, a.At)
	}
	from, to := Window(arrivals)
	plan := Plan(faultSeed, spec.Faults, from, to)
	in := &injector{
		h: h, cp: cp, fleet: fleet, binds: binds, rand: rand.New(rand.NewSource(faultSeed)),
		lease: lease, progress: opts.Progress, run: spec.Name,
	}
	injectCtx, stopInjecting := context.WithCancel(ctx)
	injected := make(chan struct{})
	go func() {
		defer close(injected)
		in.inject(injectCtx, plan)
	}()
	emuCtx, stopEmulating := context.WithCancelCause(ctx)
	go watchProgress(emuCtx, h, opts.StallTimeout, stopEmulating)
	results, emuErr := h.Emulate(emuCtx)
	if cause := context.Cause(emuCtx); cause != nil && emuErr != nil {
		emuErr = cause
	}
	stopEmulating(nil)
	stopInjecting()
	<-injected

	run := RunReport{
		Name: spec.Name, Replicas: max(spec.Replicas, 1), LeaderElection: spec.LeaderElection,
		Namespace: h.Namespace, LogDir: logDir, Faults: in.records, SchedulerExits: fleet.Exits(),
		PodsRejectedByKubelet: h.Kubelet.Rejections(),
	}
	run.Jobs, run.LostJobs = countJobs(h.Emulator.Jobs(), results)
	if emuErr != nil {
		run.Error = emuErr.Error()
	}
	// The leftover probe goes through the scheduler: wait for a leader.
	if err := fleet.WaitReady(ctx, recoveryTimeout); err != nil {
		logger.Error(err, "Schedulers not ready for the final probe")
	}
	if simRun, err := h.Report(ctx, results); err != nil {
		run.Error = strings.TrimPrefix(run.Error+"; final probe: "+err.Error(), "; ")
		run.InvariantViolations = len(h.Checker.Violations())
		run.LeakedReservations = len(h.Checker.Reservations())
	} else {
		run.InvariantViolations, run.Violations = simRun.InvariantViolations, simRun.Violations
		run.LeakedReservations = simRun.ReservationsLeft
		run.MakespanSeconds = simRun.MakespanSeconds
	}
	run.WallSeconds = float64(time.Since(started).Round(100*time.Millisecond)) / float64(time.Second)
	run.HostStallSeconds = float64(h.Clock.Stalled().Round(100*time.Millisecond)) / float64(time.Second)
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "Run %q done in %.0fs: %d/%d jobs succeeded, %d failed by faults, %d lost; %d violations, %d leaked.\n",
			spec.Name, run.WallSeconds, run.JobsSucceeded, run.JobsSubmitted, run.JobsFailedByFaults, run.JobsLost,
			run.InvariantViolations, run.LeakedReservations)
	}
	return run, nil
}

// watchProgress cancels the run when nothing moves for stall: no job ends
// and no pod of the run comes or goes. The cause names the pods still
// pending and why the scheduler leaves them so.
func watchProgress(ctx context.Context, h *sim.Harness, stall time.Duration, cancel context.CancelCauseFunc) {
	pods := h.Factory.Core().V1().Pods().Lister().Pods(h.Namespace)
	state := func() string {
		list, _ := pods.List(labels.Everything())
		return fmt.Sprintf("%d/%d", h.Emulator.Ended(), len(list))
	}
	last, since := state(), time.Now()
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if now := state(); now != last {
			last, since = now, time.Now()
			continue
		}
		if time.Since(since) < stall {
			continue
		}
		list, _ := pods.List(labels.Everything())
		var pending []string
		for _, p := range list {
			if p.Status.Phase != v1.PodPending {
				continue
			}
			why := ""
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
					why = ": " + c.Message
				}
			}
			pending = append(pending, p.Name+why)
		}
		sort.Strings(pending)
		cancel(fmt.Errorf("stalled: no job ended and no pod came or went for %v, %d of %d jobs ended; pending pods: %s",
			stall, h.Emulator.Ended(), h.Emulator.Jobs(), strings.Join(pending, "; ")))
		return
	}
}
