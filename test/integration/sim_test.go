package integration

import (
	"strings"
	"testing"

	"github.com/tandem-scheduler/tandem/harness/sim"
	"github.com/tandem-scheduler/tandem/harness/sim/report"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// compare runs the scenario file with the default kube-scheduler and with
// tandem on the same job stream and checks what holds for every run: all
// jobs accounted for, no invariant violation, nothing left reserved.
func compare(t *testing.T, file string) (baseline, tandem report.Run) {
	t.Helper()
	sc, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return compareScenario(t, sc)
}

func compareScenario(t *testing.T, sc *scenario.Scenario) (baseline, tandem report.Run) {
	t.Helper()
	rep, err := sim.Compare(t.Context(), restConfig, sc, sim.Schedulers(sim.Default, sim.Tandem), sim.Options{})
	if err != nil {
		t.Fatalf("simulator: %v", err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("got %d runs, want 2", len(rep.Runs))
	}
	for _, run := range rep.Runs {
		checkRun(t, run, len(sc.Stream(rep.Seed)))
	}
	return rep.Runs[0], rep.Runs[1]
}

// checkRun checks what holds for every run: all submitted jobs accounted
// for, no invariant violation, nothing left reserved.
func checkRun(t *testing.T, run report.Run, submitted int) {
	t.Helper()
	t.Logf("%s: %+v", run.Scheduler, run.Jobs)
	if run.Jobs.Submitted != submitted || run.Jobs.Succeeded+run.Jobs.Failed != run.Jobs.Submitted {
		t.Errorf("%s: jobs %+v, want all %d submitted jobs accounted for", run.Scheduler, run.Jobs, submitted)
	}
	if run.InvariantViolations != 0 {
		t.Errorf("%s: %d invariant violations: %v", run.Scheduler, run.InvariantViolations, run.Violations)
	}
	if run.ReservationsLeft != 0 {
		t.Errorf("%s: %d reservations left at the end", run.Scheduler, run.ReservationsLeft)
	}
}

// The simulator's seed scenario (`make demo`): with the default
// kube-scheduler the upstream failure reproduces (workflow pods rejected
// OutOfcpu by the kubelet); with tandem no job fails.
func TestSimulatorSeedScenario(t *testing.T) {
	failsWithoutTandem(t, "../scenarios/seed.yaml", "OutOfcpu")
}

// failsWithoutTandem runs the scenario file with the default scheduler and
// with tandem: with the default, some job fails for reason (the kubelet's
// rejection of its workflow pod); with tandem, none fails.
func failsWithoutTandem(t *testing.T, file, reason string) {
	t.Helper()
	baseline, tandem := compare(t, file)
	if baseline.Jobs.FailedByReason[reason] == 0 {
		t.Errorf("default kube-scheduler: no job failed %s; the failure did not reproduce: %+v", reason, baseline.Jobs)
	}
	if tandem.Jobs.Failed != 0 {
		t.Errorf("tandem: %+v, want every job to succeed", tandem.Jobs)
	}
}

// (a) The two small cases of `make demo-small`: the default scheduler
// fails exactly the jobs whose workflow pod no longer fits next to its
// runner (1 in the seed sequence, 2 in the burst); tandem fails none, and in
// the burst two runners wait for a pair slot rather than start at once.
func TestSmallScenarios(t *testing.T) {
	for file, wantFailed := range map[string]int{"../scenarios/small-seed.yaml": 1, "../scenarios/small-burst.yaml": 2} {
		t.Run(file, func(t *testing.T) {
			baseline, tandem := compare(t, file)
			if got := baseline.Jobs.FailedByReason["OutOfcpu"]; got != wantFailed || baseline.Jobs.Failed != wantFailed {
				t.Errorf("default kube-scheduler: %+v, want exactly %d job(s) failed OutOfcpu", baseline.Jobs, wantFailed)
			}
			if tandem.Jobs.Failed != 0 {
				t.Errorf("tandem: %+v, want every job to succeed", tandem.Jobs)
			}
			// A pair slot frees only when a 120 s job ends.
			if strings.Contains(file, "burst") && tandem.StartLatency.Max < 100 {
				t.Errorf("tandem: start latency %+v; want the last two jobs to wait for a pair slot", tandem.StartLatency)
			}
		})
	}
}

// test/scenarios/mixed.yaml at a small size (its 2 listed jobs and 24 of
// its 40 generated ones): every job shape (container steps, services on one
// host port, jobs without a container) under every hook mode. The default kube-scheduler fails jobs
// for capacity or host ports; tandem fails none, holds step headroom, and
// holds nothing when it reserves nothing.
func TestSimulatorMixedScenario(t *testing.T) {
	sc, err := scenario.Load("../scenarios/mixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Jobs.Generate.Count = 24
	withoutContainer := 0
	for _, a := range sc.Stream(0) {
		if !a.Container {
			withoutContainer++
		}
	}
	if withoutContainer == 0 {
		t.Fatalf("the small stream has no job without a container")
	}
	baseline, tandem := compareScenario(t, sc)
	t.Logf("default: by cause %v, in steps %d; tandem: reserved but unused %.0f cpu-s, of it step headroom %.0f",
		baseline.Jobs.FailedByCause, baseline.Jobs.FailedInSteps, tandem.ReservedUnusedCPUSeconds, tandem.StepHeadroomUnusedCPUSeconds)
	if baseline.Jobs.FailedByCause[report.CauseCapacity]+baseline.Jobs.FailedByCause[report.CauseHostPort] == 0 {
		t.Errorf("default kube-scheduler: no job failed for capacity or a host port: %+v", baseline.Jobs)
	}
	if tandem.Jobs.Failed != 0 {
		t.Errorf("tandem: %+v, want every job to succeed", tandem.Jobs)
	}
	if tandem.StepHeadroomUnusedCPUSeconds <= 0 || tandem.ReservedUnusedCPUSeconds < tandem.StepHeadroomUnusedCPUSeconds {
		t.Errorf("tandem: reserved but unused %v cpu-s, of it step headroom %v; want step headroom held, within the total",
			tandem.ReservedUnusedCPUSeconds, tandem.StepHeadroomUnusedCPUSeconds)
	}
	if baseline.ReservedUnusedCPUSeconds != 0 {
		t.Errorf("default kube-scheduler: %v cpu-s reserved but unused, want 0 (it reserves nothing)", baseline.ReservedUnusedCPUSeconds)
	}
}

// GPU jobs (test/scenarios/gpu.yaml): GPUs as device-plugin extended
// resources on tainted GPU nodes, GPU and cpu jobs mixed, hooks v0.7.0
// (pinned) and v0.8.1 (novolume). The default scheduler packs GPU runners
// onto GPU nodes beyond their GPUs and their workflow pods are rejected
// OutOfnvidia.com/gpu; tandem holds a GPU for each runner's workflow pod,
// and no job fails.
func TestSimulatorGPUScenario(t *testing.T) {
	failsWithoutTandem(t, "../scenarios/gpu.yaml", "OutOfnvidia.com/gpu")
}
