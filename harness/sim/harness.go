package sim

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/clusterautoscaler"
	"github.com/tandem-scheduler/tandem/harness/karpenter"
	"github.com/tandem-scheduler/tandem/harness/realnode"
	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/clock"
	"github.com/tandem-scheduler/tandem/harness/sim/invariant"
	"github.com/tandem-scheduler/tandem/harness/sim/kubelet"
	"github.com/tandem-scheduler/tandem/harness/sim/podgc"
	"github.com/tandem-scheduler/tandem/harness/sim/report"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
	"github.com/tandem-scheduler/tandem/harness/sim/storage"
	"github.com/tandem-scheduler/tandem/pkg/webhook"
)

// Harness is one run of a scenario without its scheduler: the namespace and
// nodes, the kubelet, storage, pod garbage collector and ARC emulators, and
// the invariant checker, all watching the run's namespace. The caller starts
// the scheduler under test against it, then Emulate runs the job stream and
// Report sums the run up. Run does that with an in-process scheduler;
// harness/sim/chaos with scheduler processes it kills.
type Harness struct {
	Client    kubernetes.Interface
	Namespace string
	// Factory's informers watch the namespace's pods (and all nodes); it
	// is started and synced. Handlers may be added to it.
	Factory informers.SharedInformerFactory
	Clock   *clock.Clock
	// Kubelet is the kubelet emulator; nil with real nodes.
	Kubelet  *kubelet.Kubelet
	Checker  *invariant.Checker
	Emulator *arc.Emulator
	// Seed is the job stream's.
	Seed int64
	// NoWorkflowPodGrace is tandem's noWorkflowPodGrace in this run (real
	// time; see NoWorkflowPodGrace): the scheduler under test must be
	// configured with it (TandemArgs), the checker releases by it.
	NoWorkflowPodGrace time.Duration
	// Label names the run in the report (default: the kind).
	Label string

	kind Kind
	// webhook is tandem-webhook, served for TandemPods with a scale set
	// pinned by nodeName, else nil.
	webhook *webhook.Local
	// auto is the run's autoscaler (scenario autoscale), else nil;
	// scaledDown and scaleEnd are what ScaleDown saw.
	auto       *autoscaler
	scaledDown bool
	scaleEnd   time.Duration
	dynFactory dynamicinformer.DynamicSharedInformerFactory
	env        *environment
	started    time.Time
	stop       context.CancelFunc
	logger     klog.Logger
}

// NewHarness creates the run's namespace, nodes and hook template
// ConfigMaps, and starts its emulators and checker until Close or the end
// of ctx.
func NewHarness(ctx context.Context, cfg *rest.Config, sc *scenario.Scenario, k Kind, opts Options) (*Harness, error) {
	logger := klog.FromContext(ctx).WithValues("scheduler", k)
	ctx = klog.NewContext(ctx, logger)
	scale := sc.TimeScale
	if opts.TimeScale > 0 {
		scale = opts.TimeScale
	}
	seed := opts.Seed
	if seed == 0 && sc.Jobs.Generate != nil {
		seed = sc.Jobs.Generate.Seed
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewSource(seed))
	// Namespaces outlive a run (no namespace controller deletes them): a
	// new one per run, whatever the scenario and seed.
	ns := namespaceName(sc.Name, k)
	h := &Harness{
		Client: client, Namespace: ns, Seed: seed, Label: string(k), kind: k, started: time.Now(), logger: logger,
		NoWorkflowPodGrace: NoWorkflowPodGrace(sc, scale),
		env:                newEnvironment(client, ns),
	}
	ctx, h.stop = context.WithCancel(ctx)
	if opts.RealNodes {
		err := checkRealNodes(sc)
		if err == nil {
			h.env.real, err = newRealNodes(client, opts.Kubeconfig)
		}
		if err != nil {
			h.stop()
			return nil, err
		}
	}
	if err := h.env.setUp(ctx, sc); err != nil {
		h.Close()
		return nil, err
	}
	// ARC's EphemeralRunners: the emulator keeps them, the checker and
	// tandem watch them (tandem finds the CRD when it starts).
	if err := arc.InstallEphemeralRunnerCRD(ctx, cfg); err != nil {
		h.Close()
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		h.Close()
		return nil, err
	}
	sets, timing, err := scaleSets(sc, k, ns, r)
	if err != nil {
		h.Close()
		return nil, err
	}
	// tandem-webhook: a workflow pod pinned with nodeName (hookMode
	// v0.7.0-nodename) bypasses every scheduler; with reservationMode: Pods
	// the kubelet counts its runner's placeholder and may reject it
	// (OutOfcpu) unless the placeholder is removed before the pod is
	// stored, which the webhook does. It is served in-process and
	// registered (cluster-wide, for pods with the runner-pod label) before
	// any pod of the run exists; Close removes it.
	if k == TandemPods && pinsWithNodeName(sets) {
		if h.webhook, err = webhook.StartLocal(ctx, client, webhook.Options{RunnerPodLabel: arc.RunnerPodLabel}); err != nil {
			h.Close()
			return nil, err
		}
		if err := h.webhook.Register(ctx, client, WebhookName, arc.RunnerPodLabel, ns); err != nil {
			h.Close()
			return nil, err
		}
		logger.Info("tandem-webhook serving", "url", h.webhook.URL())
	}
	for _, s := range sets {
		if cm := s.ConfigMap(); cm != nil {
			if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				h.Close()
				return nil, fmt.Errorf("creating hook template ConfigMap: %w", err)
			}
		}
	}

	h.Clock = clock.New(scale)
	go h.Clock.WatchStalls(ctx, func(d time.Duration) {
		logger.Info("The host stalled; simulated time held", "for", d)
	})
	h.Factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	h.Checker = invariant.New(h.Clock, h.env.live(), arc.RunnerPodLabel)
	volumes := storage.New(client, StorageClassName)
	starts := []func(context.Context, informers.SharedInformerFactory) error{
		volumes.Start, podgc.New(client, h.Clock).Start, podgc.NewOwners(client).Start, h.Checker.Start,
	}
	var exiter arc.Exiter
	if h.env.real != nil {
		volumes.LocalRoot = h.env.real.localRoot()
		exiter = h.env.real
		if _, err := h.Factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: h.env.real.observe, UpdateFunc: func(_, obj any) { h.env.real.observe(obj) },
		}); err != nil {
			h.Close()
			return nil, err
		}
	} else {
		h.Kubelet = kubelet.New(client)
		starts = append(starts, h.Kubelet.Start)
		exiter = h.Kubelet
	}
	if sc.StorageTopology == "zone" {
		volumes.TopologyKey = v1.LabelTopologyZone
	}
	if sc.Autoscale != nil {
		// The kubelet of every node the autoscaler launches (Cluster
		// Autoscaler's once they have booted: autoscale_ca.go).
		h.Kubelet.AdoptNodes(func(n *v1.Node) bool {
			return karpenter.IsKarpenterNode(n) || clusterautoscaler.IsRegisteredNode(n)
		}, 0)
		if h.auto, err = newAutoscaler(ctx, sc.Autoscale, client, cfg, h.Clock, h.env, h.Factory); err != nil {
			h.Close()
			return nil, err
		}
		h.auto.onAdd, h.auto.onRemove = h.Checker.AddNode, h.Checker.RemoveNode
	}
	for _, start := range starts {
		if err := start(ctx, h.Factory); err != nil {
			h.Close()
			return nil, err
		}
	}
	h.dynFactory = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	if err := h.Checker.StartEphemeralRunners(h.dynFactory.ForResource(contract.EphemeralRunnerResource).Informer(), h.NoWorkflowPodGrace); err != nil {
		h.Close()
		return nil, err
	}
	h.Factory.Start(ctx.Done())
	h.dynFactory.Start(ctx.Done())
	h.Factory.WaitForCacheSync(ctx.Done())
	h.dynFactory.WaitForCacheSync(ctx.Done())
	h.Emulator = arc.NewEmulator(client, h.Factory.Core().V1().Pods().Lister(), h.Clock, exiter, seed, sets, timing, arcJobs(sc.Stream(seed)))
	h.Emulator.SetEphemeralRunners(dyn)
	if h.env.real != nil {
		h.Emulator.SetLocalize(realnode.Localize)
	}
	if h.auto != nil {
		h.Emulator.SetHostnames(h.auto.hostname)
		dir := opts.AutoscalerLogDir
		if dir == "" {
			if dir, err = os.MkdirTemp("", "tandem-sim-autoscaler-"); err != nil {
				h.Close()
				return nil, err
			}
		}
		if err := h.auto.start(ctx, cfg, opts.Kubeconfig, filepath.Join(dir, string(k))); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// TandemArgs are the WorkflowReservation args the run's nodes need beyond
// SchedulerConfig's: on real nodes the placeholders run the nodes' local
// image.
func (h *Harness) TandemArgs() []string {
	if h.env.real == nil {
		return nil
	}
	return []string{"placeholderImage: " + realnode.ImageName}
}

// WebhookName is the ValidatingWebhookConfiguration of tandem-webhook in a
// run of TandemPods with a scale set pinned by nodeName.
const WebhookName = "tandem-sim-webhook"

// pinsWithNodeName reports whether a scale set's hook pins workflow pods
// with nodeName.
func pinsWithNodeName(sets []*arc.ScaleSet) bool {
	for _, s := range sets {
		if s.HookMode == arc.HookNodeName {
			return true
		}
	}
	return false
}

// ScaleDown waits, in a run with autoscaling, for the autoscaler to remove
// the nodes it launched (the lull after the last job), then removes what is
// left and stops the autoscaler, so that the probe (Report) sees only the
// scenario's nodes and no later run inherits a node. Without autoscaling
// it does nothing.
func (h *Harness) ScaleDown(ctx context.Context) error {
	if h.auto == nil {
		return nil
	}
	h.scaledDown = h.auto.awaitScaleDown(ctx)
	h.scaleEnd = h.Clock.Now()
	if !h.scaledDown {
		h.logger.Info("The autoscaler did not remove every node it launched in time", "autoscaler", h.auto.spec.Kind(), "left", h.auto.live())
	}
	return h.auto.stop(ctx)
}

// Close stops the emulators and informers and removes the run's pods,
// claims, volumes and nodes.
func (h *Harness) Close() {
	if h.auto != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := h.auto.stop(ctx); err != nil {
			h.logger.Error(err, "Stopping the autoscaler", "autoscaler", h.auto.spec.Kind())
		}
		cancel()
	}
	if h.webhook != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := h.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, WebhookName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			h.logger.Error(err, "Deleting the webhook configuration", "name", WebhookName)
		}
		cancel()
		if err := h.webhook.Stop(); err != nil {
			h.logger.Error(err, "Stopping tandem-webhook")
		}
	}
	h.stop()
	if h.Factory != nil {
		h.Factory.Shutdown()
	}
	if h.dynFactory != nil {
		h.dynFactory.Shutdown()
	}
	h.env.cleanup(h.logger)
}

// Emulate runs the job stream, simulated time starting now, until every job
// has ended and ARC has scaled to zero. On error it returns the results of
// the jobs that ended.
func (h *Harness) Emulate(ctx context.Context) ([]arc.Result, error) {
	ctx = klog.NewContext(ctx, h.logger)
	h.Clock.Reset()
	return h.Emulator.Run(ctx)
}

// Report probes every node for room still held by the scheduler under test
// (see probe) and sums the run up.
func (h *Harness) Report(ctx context.Context, results []arc.Result) (report.Run, error) {
	samples := h.Checker.Samples()
	// What the real kubelets did, before the probe's pods reach them.
	var localize func(*v1.Pod)
	var nodes *report.RealNodes
	if h.env.real != nil {
		localize, nodes = realnode.Localize, h.env.real.summary()
	}
	blocked, err := probe(ctx, h.Client, h.Namespace, h.kind.SchedulerName(), h.env.live(), localize)
	if err != nil {
		return report.Run{}, err
	}
	run := report.NewRun(h.Label, results, samples, h.env.everyNode())
	for _, v := range h.Checker.Violations() {
		run.Violations = append(run.Violations, fmt.Sprintf("t=%.0fs node %s: %s", v.T.Seconds(), v.Node, v.Message))
	}
	run.InvariantViolations = len(run.Violations)
	if h.auto != nil {
		end := h.scaleEnd
		for _, r := range results {
			end = max(end, r.Ended)
		}
		run.SetAutoscale(h.auto.summary(end, h.env.staticCPU(), h.scaledDown))
	}
	run.ReservationsLeft = len(h.Checker.Reservations()) + len(blocked)
	run.RealNodes = nodes
	run.WallSeconds = float64(time.Since(h.started).Round(100*time.Millisecond)) / float64(time.Second)
	if len(blocked) > 0 {
		h.logger.Error(nil, "Room still held after every runner finished", "nodes", blocked)
	}
	return run, nil
}

// Nodes returns the run's nodes now (deleted ones excluded), sorted.
func (h *Harness) Nodes() []string { return h.env.names() }

// ReplaceNode deletes node as when its machine goes away, and adds a fresh
// node of the same pool under a new name, so the run keeps its capacity:
// the runners on it die (their jobs fail, arc.ReasonNodeDeleted), its
// kubelet stops, the invariant checker stops checking it, and the Node
// object is deleted; the pod garbage collector deletes its pods later. It
// returns the new node's name and the runner pods that were lost.
func (h *Harness) ReplaceNode(ctx context.Context, node string) (string, []string, error) {
	if h.env.real != nil {
		return "", nil, fmt.Errorf("replacing node %s: real nodes are not replaced", node)
	}
	lost, err := h.Emulator.NodeLost(ctx, node)
	if err != nil {
		return "", nil, err
	}
	h.Kubelet.NodeLost(node)
	h.Checker.RemoveNode(node)
	if err := h.env.deleteNode(ctx, node); err != nil {
		return "", lost, err
	}
	name, alloc, err := h.env.addNodeLike(ctx, node)
	if err != nil {
		return "", lost, err
	}
	h.Checker.AddNode(name, alloc)
	h.logger.V(2).Info("Replaced node", "node", node, "replacement", name, "runnersLost", lost)
	return name, lost, nil
}
