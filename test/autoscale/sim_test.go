package autoscale

import (
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/sim"
	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// TestSimulatorAutoscale runs test/scenarios/autoscale.yaml small (6 jobs
// of its burst, no second wave) with the real Karpenter, on a control plane
// of its own (the package's runs a Karpenter of its own, which would launch
// nodes for this run's pods too), once with tandem-pods and once with the
// default kube-scheduler. tandem-pods fails no job, has Karpenter launch at
// least one node and remove every one it launched in the lull; the default
// scheduler's run completes and reports its launched nodes. Both keep the
// invariant and leave nothing reserved.
func TestSimulatorAutoscale(t *testing.T) {
	sc, err := scenario.Load("../scenarios/autoscale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Jobs.List = nil
	sc.Jobs.Generate.Count = 6
	sc.Jobs.Generate.MinDuration = metav1.Duration{Duration: 60 * time.Second}
	sc.Jobs.Generate.MaxDuration = metav1.Duration{Duration: 120 * time.Second}

	cp, err := controlplane.Start(t.Context(), controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	}()
	logDir := filepath.Join(t.TempDir(), "karpenter")
	rep, err := sim.Compare(t.Context(), cp.RESTConfig(), sc, sim.Schedulers(sim.TandemPods, sim.Default),
		sim.Options{Kubeconfig: cp.KubeconfigPath(), AutoscalerLogDir: logDir, Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatalf("simulator (Karpenter's logs in %s): %v", logDir, err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("got %d runs, want 2", len(rep.Runs))
	}
	submitted := len(sc.Stream(rep.Seed))
	for _, run := range rep.Runs {
		t.Logf("%s: jobs %+v, start latency %+v, autoscale %+v", run.Scheduler, run.Jobs, run.StartLatency, run.Autoscale)
		if run.Jobs.Submitted != submitted || run.Jobs.Succeeded+run.Jobs.Failed != submitted {
			t.Errorf("%s: jobs %+v, want all %d submitted jobs accounted for", run.Scheduler, run.Jobs, submitted)
		}
		if run.InvariantViolations != 0 || run.ReservationsLeft != 0 {
			t.Errorf("%s: %d invariant violations (%v), %d reservations left", run.Scheduler, run.InvariantViolations, run.Violations, run.ReservationsLeft)
		}
		if run.Autoscale == nil || run.Autoscale.NodeSeconds <= 0 {
			t.Fatalf("%s: autoscale %+v, want the nodes' cost reported", run.Scheduler, run.Autoscale)
		}
	}
	pods, baseline := rep.Runs[0], rep.Runs[1]
	if pods.Jobs.Failed != 0 {
		t.Errorf("tandem-pods: %+v, want every job to succeed", pods.Jobs)
	}
	if a := pods.Autoscale; a.Launched == 0 || !a.ScaledDown || a.Left != 0 {
		t.Errorf("tandem-pods: autoscale %+v, want Karpenter to launch nodes and remove every one after the lull", a)
	}
	// The default scheduler puts every runner on the static node, where
	// they fit: Karpenter sees no runner pending, and a workflow pod pinned
	// to its runner's full node is one no new node can help.
	if baseline.Jobs.FailedByReason[arc.ReasonPrepareJobTimeout] == 0 {
		t.Errorf("default kube-scheduler: %+v, want workflow pods left pending on their runners' nodes until the hook gives up", baseline.Jobs)
	}
}
