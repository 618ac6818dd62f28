package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/tandem-scheduler/tandem/harness/sim"
	"github.com/tandem-scheduler/tandem/harness/sim/report"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// runOnRealNodes runs the scenario file on real kubelets with containerd
// (harness/realnode, built by make kubelet) with each scheduler, checks each
// run (checkRun) and that it was on real nodes.
func runOnRealNodes(t *testing.T, file string, schedulers ...sim.Scheduler) map[sim.Kind]report.Run {
	t.Helper()
	sc, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	// A run takes about 30 s; one whose jobs never end fails after 5
	// minutes, not at the package's timeout.
	rep, err := sim.Compare(t.Context(), restConfig, sc, schedulers, sim.Options{RealNodes: true, Kubeconfig: controlPlane.KubeconfigPath(), Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatalf("simulator on real nodes: %v", err)
	}
	runs := map[sim.Kind]report.Run{}
	for i, run := range rep.Runs {
		checkRun(t, run, len(sc.Stream(rep.Seed)))
		if run.RealNodes == nil {
			t.Fatalf("%s: the report has no real nodes' record", run.Scheduler)
		}
		t.Logf("%s: real kubelets: %+v", run.Scheduler, *run.RealNodes)
		runs[schedulers[i].Kind] = run
	}
	return runs
}

// The seed failure on real kubelets running real containers: two nodes of
// 1500m, runner and workflow pod (pinned by nodeName, hooks v0.7.0) 500m
// each, the second job once the first runs. The default kube-scheduler
// puts runner 2 next to pair 1 and the real kubelet rejects its workflow
// pod OutOfcpu; with tandem, in both reservation modes, no job fails and the
// kubelets reject nothing; in Pods mode every runner had a placeholder on
// its kubelet, which ran it as a container. (Runner, placeholder and
// workflow pod fill a node exactly here, so this test does not show the
// hand-over; the burst does.)
func TestSeedOnRealKubelets(t *testing.T) {
	runs := runOnRealNodes(t, "../scenarios/kubelet-seed.yaml", sim.Schedulers(sim.Default, sim.Tandem, sim.TandemPods)...)
	baseline := runs[sim.Default]
	if got := baseline.Jobs.FailedByReason["OutOfcpu"]; got != 1 || baseline.Jobs.Failed != 1 {
		t.Errorf("default kube-scheduler: %+v, want exactly 1 job failed OutOfcpu", baseline.Jobs)
	}
	if got := baseline.RealNodes.PodsRejected; got["OutOfcpu"] != 1 || baseline.RealNodes.Rejected() != 1 {
		t.Errorf("default kube-scheduler: the kubelets rejected %v, want one pod OutOfcpu", got)
	}
	for _, f := range baseline.Failures {
		if !strings.HasPrefix(f.Message, "Pod was rejected: Node didn't have enough resource: cpu") {
			t.Errorf("default kube-scheduler: job %d failed %q, want the kubelet's rejection", f.Job, f.Message)
		}
	}
	for _, k := range []sim.Kind{sim.Tandem, sim.TandemPods} {
		if runs[k].Jobs.Failed != 0 {
			t.Errorf("%s: %+v, want every job to succeed", k, runs[k].Jobs)
		}
		if got := runs[k].RealNodes.PodsRejected; len(got) != 0 {
			t.Errorf("%s: the kubelets rejected %v, want none", k, got)
		}
	}
	checkPlaceholders(t, runs[sim.TandemPods], 2)
}

// Pods mode on real kubelets under a burst: 20 jobs at once fill two
// nodes exactly; every runner's placeholder runs as a container until its
// workflow pod takes its room, both ways tandem hands it over: half the
// workflow pods are pinned by nodeName (hooks v0.7.0), so tandem-webhook
// deletes the placeholder before the pod is stored; half go through tandem
// (kube-scheduler mode), which deletes it with grace 0 at Permit, before
// the Binding. No job fails and the kubelets reject nothing: with the
// nodes full, a workflow pod admitted while its placeholder still counted
// on the kubelet would have been rejected OutOfcpu, by either way.
func TestPodsModeBurstOnRealKubelets(t *testing.T) {
	run := runOnRealNodes(t, "../scenarios/kubelet-burst.yaml", sim.Schedulers(sim.TandemPods)...)[sim.TandemPods]
	if run.Jobs.Failed != 0 {
		t.Errorf("tandem-pods: %+v, want every job to succeed", run.Jobs)
	}
	if got := run.RealNodes.PodsRejected; len(got) != 0 {
		t.Errorf("tandem-pods: the kubelets rejected %v, want none", got)
	}
	checkPlaceholders(t, run, 20)
}

// checkPlaceholders checks that a run in Pods mode had one placeholder per
// runner and that the kubelets ran them as containers: at least one (a
// placeholder handed over before its kubelet started it never runs).
func checkPlaceholders(t *testing.T, run report.Run, runners int) {
	t.Helper()
	if got := run.RealNodes.Placeholders; got != runners {
		t.Errorf("%s: %d placeholders, want one per runner (%d)", run.Scheduler, got, runners)
	}
	if run.RealNodes.PlaceholdersRan == 0 {
		t.Errorf("%s: the kubelets ran none of the %d placeholders as a container", run.Scheduler, run.RealNodes.Placeholders)
	}
}
