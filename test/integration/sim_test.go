package integration

import (
	"strings"
	"testing"

	"github.com/tandem-scheduler/tandem/pkg/sim"
	"github.com/tandem-scheduler/tandem/pkg/sim/report"
	"github.com/tandem-scheduler/tandem/pkg/sim/scenario"
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
	rep, err := sim.Compare(t.Context(), restConfig, sc, []sim.Kind{sim.Default, sim.Tandem}, sim.Options{})
	if err != nil {
		t.Fatalf("simulator: %v", err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("got %d runs, want 2", len(rep.Runs))
	}
	submitted := len(sc.Stream(rep.Seed))
	for _, run := range rep.Runs {
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
	return rep.Runs[0], rep.Runs[1]
}

// The simulator's seed scenario (`make demo`): with the default
// kube-scheduler the upstream failure reproduces (workflow pods rejected
// OutOfcpu by the kubelet); with tandem no job fails.
func TestSimulatorSeedScenario(t *testing.T) {
	baseline, tandem := compare(t, "../scenarios/seed.yaml")
	if baseline.Jobs.FailedByReason["OutOfcpu"] == 0 {
		t.Errorf("default kube-scheduler: no job failed OutOfcpu; the seed failure did not reproduce: %+v", baseline.Jobs)
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
