package integration

import (
	"testing"

	"github.com/tandem-scheduler/tandem/pkg/sim/scenario"
	"github.com/tandem-scheduler/tandem/test/sim"
)

// The simulator's seed scenario (`make demo`): with the default
// kube-scheduler the upstream failure reproduces (workflow pods rejected
// OutOfcpu by the kubelet); with tandem no job fails, the invariant holds
// throughout and no reservation is left at the end.
func TestSimulatorSeedScenario(t *testing.T) {
	sc, err := scenario.Load("../scenarios/seed.yaml")
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
	baseline, tandem := rep.Runs[0], rep.Runs[1]
	t.Logf("default: %+v", baseline.Jobs)
	t.Logf("tandem:  %+v", tandem.Jobs)
	for _, run := range rep.Runs {
		if run.Jobs.Submitted != 36 || run.Jobs.Succeeded+run.Jobs.Failed != run.Jobs.Submitted {
			t.Errorf("%s: jobs %+v, want all 36 submitted jobs accounted for", run.Scheduler, run.Jobs)
		}
		if run.InvariantViolations != 0 {
			t.Errorf("%s: %d invariant violations: %v", run.Scheduler, run.InvariantViolations, run.Violations)
		}
		if run.ReservationsLeft != 0 {
			t.Errorf("%s: %d reservations left at the end", run.Scheduler, run.ReservationsLeft)
		}
	}
	if baseline.Jobs.FailedByReason["OutOfcpu"] == 0 {
		t.Errorf("default kube-scheduler: no job failed OutOfcpu; the seed failure did not reproduce: %+v", baseline.Jobs)
	}
	if tandem.Jobs.Failed != 0 || tandem.Jobs.Succeeded != 36 {
		t.Errorf("tandem: %+v, want all 36 jobs to succeed", tandem.Jobs)
	}
}
