package integration

import (
	"context"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/realnode"
	"github.com/tandem-scheduler/tandem/pkg/sim"
	"github.com/tandem-scheduler/tandem/pkg/sim/report"
	"github.com/tandem-scheduler/tandem/pkg/sim/scenario"
)

// nodeWatch records, for every pod of the cluster, what the real kubelets
// reported: the pods they rejected (a status reason such as OutOfcpu) and
// the placeholders whose container they ran.
type nodeWatch struct {
	mu       sync.Mutex
	rejected map[string]string // namespace/name -> reason: message
	ran      map[string]bool   // placeholders seen with a running container, namespace/name
}

func watchNodes(t *testing.T) *nodeWatch {
	t.Helper()
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	w := &nodeWatch{rejected: map[string]string{}, ran: map[string]bool{}}
	factory := informers.NewSharedInformerFactory(client, 0)
	record := func(obj any) {
		pod, ok := obj.(*v1.Pod)
		if !ok {
			return
		}
		key := pod.Namespace + "/" + pod.Name
		w.mu.Lock()
		defer w.mu.Unlock()
		if pod.Status.Phase == v1.PodFailed && pod.Status.Reason != "" {
			w.rejected[key] = pod.Status.Reason + ": " + pod.Status.Message
		}
		if pod.Labels[contract.PlaceholderLabel] == "true" {
			for _, c := range pod.Status.ContainerStatuses {
				if c.State.Running != nil && c.Image == realnode.ImageName {
					w.ran[key] = true
				}
			}
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return w
}

// ofRun reports whether key (namespace/name) is a pod of a simulator run
// of scenario with k: its namespace is sim-<scenario>-<k>-<suffix>, the
// suffix without a dash (so tandem's runs are not tandem-pods').
func ofRun(key, scenario string, k sim.Kind) bool {
	ns, _, _ := strings.Cut(key, "/")
	suffix, ok := strings.CutPrefix(ns, "sim-"+scenario+"-"+string(k)+"-")
	return ok && !strings.Contains(suffix, "-")
}

// rejections returns the pods of the runs of scenario with k that the
// kubelets rejected.
func (w *nodeWatch) rejections(scenario string, k sim.Kind) map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for key, why := range w.rejected {
		if ofRun(key, scenario, k) {
			out[key] = why
		}
	}
	return out
}

// placeholdersRan counts the placeholders of the runs of scenario with k
// whose container a kubelet ran.
func (w *nodeWatch) placeholdersRan(scenario string, k sim.Kind) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for key := range w.ran {
		if ofRun(key, scenario, k) {
			n++
		}
	}
	return n
}

// runOnRealNodes runs the scenario file on real kubelets with containerd
// (pkg/realnode, built by make kubelet) with each scheduler, and checks
// each run (checkRun).
func runOnRealNodes(t *testing.T, file string, schedulers ...sim.Scheduler) map[sim.Kind]report.Run {
	t.Helper()
	sc, err := scenario.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Compare(t.Context(), restConfig, sc, schedulers, sim.Options{RealNodes: true, Kubeconfig: controlPlane.KubeconfigPath()})
	if err != nil {
		t.Fatalf("simulator on real nodes: %v", err)
	}
	runs := map[sim.Kind]report.Run{}
	for i, run := range rep.Runs {
		checkRun(t, run, len(sc.Stream(rep.Seed)))
		runs[schedulers[i].Kind] = run
	}
	return runs
}

// The seed failure on real kubelets running real containers: two nodes of
// 1500m, runner and workflow pod (pinned by nodeName, hooks v0.7.0) 500m
// each, the second job once the first runs. The default kube-scheduler
// puts runner 2 next to pair 1 and the real kubelet rejects its workflow
// pod OutOfcpu; with tandem, in both reservation modes, no job fails and the
// kubelets reject nothing; in Pods mode the kubelets ran the placeholders
// as containers, and the hand-over (placeholder deleted with grace 0, then
// the workflow pod admitted) went through the kubelet.
func TestSeedOnRealKubelets(t *testing.T) {
	w := watchNodes(t)
	runs := runOnRealNodes(t, "../scenarios/kubelet-seed.yaml", sim.Schedulers(sim.Default, sim.Tandem, sim.TandemPods)...)
	if got := runs[sim.Default].Jobs.FailedByReason["OutOfcpu"]; got != 1 {
		t.Errorf("default kube-scheduler: %+v, want exactly 1 job failed OutOfcpu on the real kubelet", runs[sim.Default].Jobs)
	}
	defaultRejections := w.rejections("kubelet-seed", sim.Default)
	if len(defaultRejections) != 1 {
		t.Errorf("default kube-scheduler: the kubelets rejected %v, want one workflow pod", defaultRejections)
	}
	for _, why := range defaultRejections {
		if !strings.HasPrefix(why, "OutOfcpu: Pod was rejected: Node didn't have enough resource: cpu") {
			t.Errorf("default kube-scheduler: a pod was rejected %q, want the kubelet's OutOfcpu", why)
		}
	}
	for _, k := range []sim.Kind{sim.Tandem, sim.TandemPods} {
		if runs[k].Jobs.Failed != 0 {
			t.Errorf("%s: %+v, want every job to succeed", k, runs[k].Jobs)
		}
		if got := w.rejections("kubelet-seed", k); len(got) != 0 {
			t.Errorf("%s: the kubelets rejected %v, want none", k, got)
		}
	}
	if got := w.placeholdersRan("kubelet-seed", sim.TandemPods); got != 2 {
		t.Errorf("tandem-pods: the kubelets ran %d placeholders, want one per runner (2)", got)
	}
}

// Pods mode on real kubelets under a burst: 20 jobs at once fill two
// nodes exactly; every runner's placeholder runs as a container until its
// workflow pod (pinned by nodeName, so admitted through tandem-webhook,
// which deletes the placeholder before the pod is stored) takes its room.
// No job fails and the kubelets reject nothing.
func TestPodsModeBurstOnRealKubelets(t *testing.T) {
	w := watchNodes(t)
	runs := runOnRealNodes(t, "../scenarios/kubelet-burst.yaml", sim.Schedulers(sim.TandemPods)...)
	if runs[sim.TandemPods].Jobs.Failed != 0 {
		t.Errorf("tandem-pods: %+v, want every job to succeed", runs[sim.TandemPods].Jobs)
	}
	if got := w.rejections("kubelet-burst", sim.TandemPods); len(got) != 0 {
		t.Errorf("tandem-pods: the kubelets rejected %v, want none", got)
	}
	if got := w.placeholdersRan("kubelet-burst", sim.TandemPods); got != 20 {
		t.Errorf("tandem-pods: the kubelets ran %d placeholders, want one per runner (20)", got)
	}
}
