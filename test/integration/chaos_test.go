package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/sim/chaos"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// The short version of `make chaos`: the chaos scenario with 100 jobs per
// run against the tandem-scheduler binary (bin/, `make build`). The single
// scheduler is SIGKILLed 3 times and restarted; of two replicas electing a
// leader, the leader is SIGKILLed once and kube-apiserver restarts once;
// each run also fails a running runner (ARC recreates its pod under the same
// name) and replaces a node. Whatever the timing, no job may be lost (fail
// for lack of room or never end), the invariant must hold all along, no
// reservation may be left, and every fault must have been injected. The
// report's timings are not asserted.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own control plane and runs 200 jobs")
	}
	ctx := t.Context()
	bin, err := controlplane.ResolveBinDir("")
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(bin, controlplane.SchedulerName)
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("%v (run `make build` first)", err)
	}
	sc, err := scenario.Load("../scenarios/chaos.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Kept when the test fails: the schedulers' -v=4 logs and the control
	// plane's show the sequence behind a finding.
	dir, err := os.MkdirTemp("", "tandem-chaos-test-")
	if err != nil {
		t.Fatal(err)
	}
	// Its own control plane: the test restarts kube-apiserver.
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: filepath.Join(dir, "controlplane")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
		if t.Failed() {
			t.Logf("logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})

	kills, leaderKills, restarts, runnerFailures, nodeDeletions := 3, 1, 1, 1, 1
	rep, err := chaos.Run(ctx, cp, sc, chaos.Options{
		Binary: binary, LogDir: filepath.Join(dir, "logs"), Verbosity: 4, Jobs: 100,
		Override: chaos.Override{
			Kills: &kills, LeaderKills: &leaderKills, APIServerRestarts: &restarts,
			RunnerFailures: &runnerFailures, NodeDeletions: &nodeDeletions,
		},
		Progress: testWriter{t},
	})
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	if err := chaos.WriteJSON(filepath.Join(dir, "report.json"), rep); err != nil {
		t.Error(err)
	}
	t.Logf("report: %s; failover %+v, kill recovery %+v, apiserver recovery %+v (real seconds)",
		filepath.Join(dir, "report.json"), rep.FailoverSeconds, rep.KillRecoverySeconds, rep.APIServerRecoverySeconds)

	runs := len(sc.Chaos.Runs)
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"kills", rep.Kills, kills},
		{"leader kills", rep.LeaderKills, leaderKills},
		{"apiserver restarts", rep.APIServerRestarts, restarts},
		{"runner failures", rep.RunnerFailuresInjected, runnerFailures * runs},
		{"nodes deleted", rep.NodesDeleted, nodeDeletions * runs},
		{"faults not injected", rep.FaultsNotInjected, 0},
		{"jobs submitted", rep.JobsSubmitted, 100 * runs},
		{"jobs accounted for", rep.JobsSucceeded + rep.JobsFailedByFaults + rep.JobsLost, 100 * runs},
		{"jobs lost", rep.JobsLost, 0},
		{"invariant violations", rep.InvariantViolations, 0},
		{"leaked reservations", rep.LeakedReservations, 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
	if len(rep.PodsRejectedByKubelet) != 0 {
		t.Errorf("pods rejected by the kubelet: %v, want none", rep.PodsRejectedByKubelet)
	}
	for _, run := range rep.Runs {
		if run.Error != "" {
			t.Errorf("run %s: %s", run.Name, run.Error)
		}
		for _, v := range run.Violations {
			t.Errorf("run %s: invariant violated: %s", run.Name, v)
		}
		for _, f := range run.LostJobs {
			t.Errorf("run %s: job %d lost on %s at %.0fs: %s: %s", run.Name, f.Job, f.Node, f.AtSeconds, f.Reason, f.Message)
		}
		for _, f := range run.Faults {
			if f.Error != "" {
				t.Errorf("run %s: fault %s at %.0fs: %s", run.Name, f.Kind, f.AtSeconds, f.Error)
			}
		}
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
