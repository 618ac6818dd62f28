package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/harness/clusterautoscaler"
	"github.com/tandem-scheduler/tandem/harness/karpenter"
	"github.com/tandem-scheduler/tandem/harness/sim/clock"
	"github.com/tandem-scheduler/tandem/harness/sim/report"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// NodePoolName is the Karpenter NodePool (and KWOKNodeClass) of a run with
// autoscaling; its NodeClaims, and so the hostname labels of its nodes, are
// named sim-<5>.
const NodePoolName = "sim"

// autoscaler is a run's Karpenter or Cluster Autoscaler (scenario.Autoscale)
// and the nodes it launched. The kubelet emulator adopts those nodes; the
// autoscaler tells the environment, the invariant checker and the ARC
// emulator's hook about them as they come and go, and records their
// lifetimes in simulated time, from their registration (the boot excluded,
// for either autoscaler) to their deletion.
type autoscaler struct {
	spec   *scenario.Autoscale
	client kubernetes.Interface
	dyn    dynamic.Interface
	clock  *clock.Clock
	env    *environment
	// onAdd and onRemove tell the invariant checker.
	onAdd    func(name string, allocatable v1.ResourceList)
	onRemove func(name string)
	karp     *karpenter.Karpenter
	ca       *clusterautoscaler.ClusterAutoscaler
	started  time.Time
	logger   klog.Logger
	// ctx bounds the registrations of Cluster Autoscaler's nodes; cancel
	// ends them (stop).
	ctx    context.Context
	cancel context.CancelFunc
	// registering counts the registrations scheduled and not finished.
	registering sync.WaitGroup

	mu    sync.Mutex
	nodes map[string]*launched
	// booting holds Cluster Autoscaler's nodes not registered yet.
	booting map[string]*time.Timer
	// stopped is set when stop began: no node boots after it.
	stopped bool
}

// clusterAutoscaler reports whether the run's autoscaler is Cluster Autoscaler.
func (a *autoscaler) clusterAutoscaler() bool {
	return a.spec.Kind() == scenario.ClusterAutoscaler
}

// launched is a node the autoscaler launched in the run.
type launched struct {
	uid              types.UID
	hostname, size   string
	allocatable      v1.ResourceList
	created, gone    time.Duration
	deleted          bool
	capacityMilliCPU int64
}

// newAutoscaler registers the node handlers on factory (before it starts).
func newAutoscaler(ctx context.Context, spec *scenario.Autoscale, client kubernetes.Interface, cfg *rest.Config, clk *clock.Clock, env *environment, factory informers.SharedInformerFactory) (*autoscaler, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	a := &autoscaler{spec: spec, client: client, dyn: dyn, clock: clk, env: env, started: time.Now(),
		logger: klog.FromContext(ctx), nodes: map[string]*launched{}, booting: map[string]*time.Timer{}}
	a.ctx, a.cancel = context.WithCancel(ctx)
	_, err = factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { a.onNode(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			a.onNodeGone(obj)
		},
	})
	return a, err
}

// ours reports whether node is one the run's autoscaler launched: a KWOK
// node of the run's NodePool, or of Cluster Autoscaler's KWOK provider,
// created after the run started (a node left Terminating by an earlier run
// is not).
func (a *autoscaler) ours(node *v1.Node) bool {
	if node.CreationTimestamp.Time.Before(a.started.Truncate(time.Second)) {
		return false
	}
	if a.clusterAutoscaler() {
		return clusterautoscaler.IsClusterAutoscalerNode(node)
	}
	return karpenter.IsKarpenterNode(node) && node.Labels[karpenter.NodePoolLabel] == NodePoolName
}

func (a *autoscaler) onNode(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok || !a.ours(node) {
		return
	}
	if a.clusterAutoscaler() && !clusterautoscaler.Registered(node) {
		a.boot(node)
		return
	}
	a.mu.Lock()
	delete(a.booting, node.Name)
	if _, known := a.nodes[node.Name]; known {
		a.mu.Unlock()
		return
	}
	size := node.Labels[karpenter.InstanceCPULabel]
	if a.clusterAutoscaler() {
		size = node.Status.Capacity.Cpu().String()
	}
	l := &launched{
		uid: node.UID, hostname: node.Labels[v1.LabelHostname], size: size,
		allocatable: node.Status.Allocatable, created: a.clock.Now(), capacityMilliCPU: node.Status.Capacity.Cpu().MilliValue(),
	}
	a.nodes[node.Name] = l
	a.mu.Unlock()
	a.env.addExternal(node.Name, node.Status.Allocatable)
	a.onAdd(node.Name, node.Status.Allocatable)
	a.logger.V(2).Info("The autoscaler launched a node", "autoscaler", a.spec.Kind(), "node", node.Name, "hostname", l.hostname, "cpus", l.size, "t", l.created)
}

func (a *autoscaler) onNodeGone(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	a.mu.Lock()
	if t, ok := a.booting[node.Name]; ok {
		t.Stop()
		delete(a.booting, node.Name)
	}
	l, known := a.nodes[node.Name]
	if known && !l.deleted {
		l.deleted, l.gone = true, a.clock.Now()
	}
	a.mu.Unlock()
	if !known {
		return
	}
	a.env.removeExternal(node.Name)
	a.onRemove(node.Name)
	a.logger.V(2).Info("The autoscaler removed a node", "autoscaler", a.spec.Kind(), "node", node.Name, "t", l.gone)
}

// hostname returns a launched node's hostname label ("" for other nodes).
func (a *autoscaler) hostname(node string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l, ok := a.nodes[node]; ok {
		return l.hostname
	}
	return ""
}

// start starts the autoscaler, its log in dir: Karpenter (its CRDs, the
// NodePool) or Cluster Autoscaler (startClusterAutoscaler).
func (a *autoscaler) start(ctx context.Context, cfg *rest.Config, kubeconfig, dir string) error {
	if kubeconfig == "" {
		return fmt.Errorf("scenario with autoscale: Options.Kubeconfig is required to run %s", a.spec.Kind())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if a.clusterAutoscaler() {
		return a.startClusterAutoscaler(ctx, kubeconfig, dir)
	}
	_ = os.Remove(filepath.Join(dir, karpenter.Name+".log"))
	inReal := func(d time.Duration) time.Duration { return a.clock.Real(d).Round(time.Second) }
	var err error
	a.karp, err = karpenter.Start(ctx, cfg, karpenter.Options{
		Kubeconfig: kubeconfig,
		Dir:        dir,
		NodePool: karpenter.NodePool{
			Name:                NodePoolName,
			InstanceFamily:      a.spec.InstanceFamily,
			InstanceCPUs:        a.spec.CPUs(),
			ConsolidationPolicy: a.spec.Policy(),
			ConsolidateAfter:    inReal(a.spec.Consolidation()),
			RegistrationDelay:   inReal(a.spec.Registration()),
			CPULimit:            a.spec.CPULimit,
		},
		// As test/autoscale: a pending pod waits 500ms real for its batch.
		BatchIdleDuration: 500 * time.Millisecond,
		BatchMaxDuration:  3 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("starting karpenter (log in %s): %w", dir, err)
	}
	a.logger.Info("Karpenter started", "log", a.karp.Process().LogPath)
	return nil
}

// awaitScaleDown waits, up to the scenario's scaleDownTimeout (simulated;
// at least 60 s real, Karpenter's own loops run in real time), until every
// node the autoscaler launched is gone, and returns whether they all went.
func (a *autoscaler) awaitScaleDown(ctx context.Context) bool {
	timeout := max(a.clock.Real(a.spec.ScaleDownWait()), time.Minute)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return a.live() == 0, nil
	})
	return err == nil
}

// live counts the launched nodes not yet deleted, booting ones included.
func (a *autoscaler) live() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.booting)
	for _, l := range a.nodes {
		if !l.deleted {
			n++
		}
	}
	return n
}

// stop deletes the NodeClaims left (Karpenter drains and removes their
// nodes), waits for them, stops Karpenter, and strips the finalizers of
// whatever is still there so that no later run inherits it.
func (a *autoscaler) stop(ctx context.Context) error {
	if a.clusterAutoscaler() {
		return a.stopClusterAutoscaler(ctx)
	}
	if a.karp == nil {
		return nil
	}
	claims := a.dyn.Resource(karpenter.NodeClaimGVR)
	if err := claims.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		a.logger.Error(err, "Deleting the NodeClaims left")
	}
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := claims.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	err := a.karp.Stop()
	a.karp = nil
	unfinalize := []byte(`{"metadata":{"finalizers":null}}`)
	if list, lerr := claims.List(ctx, metav1.ListOptions{}); lerr == nil {
		for _, c := range list.Items {
			_, _ = claims.Patch(ctx, c.GetName(), types.MergePatchType, unfinalize, metav1.PatchOptions{})
		}
	}
	if nodes, lerr := a.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); lerr == nil {
		for _, n := range nodes.Items {
			if karpenter.IsKarpenterNode(&n) {
				_, _ = a.client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, unfinalize, metav1.PatchOptions{})
				_ = a.client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
			}
		}
	}
	return err
}

// summary sums the autoscaling up over [0, end] (simulated): the nodes
// launched, by size, and the node-seconds of every node of the run, the
// static ones (alive from 0) included; static maps the static nodes to
// their capacity cpu (millicores).
func (a *autoscaler) summary(end time.Duration, static map[string]int64, scaledDown bool) (*report.Autoscale, map[string]report.Lifetime) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &report.Autoscale{Autoscaler: a.spec.Kind(), BySize: map[string]int{}, ScaledDown: scaledDown}
	lifetimes := map[string]report.Lifetime{}
	add := func(from, to time.Duration, milliCPU int64) {
		if to > from {
			s.NodeSeconds += (to - from).Seconds()
			s.NodeCPUSeconds += (to - from).Seconds() * float64(milliCPU) / 1000
		}
	}
	for _, milli := range static {
		add(0, end, milli)
	}
	for name, l := range a.nodes {
		s.Launched++
		s.BySize[l.size]++
		to := end
		if l.deleted {
			to = min(l.gone, end)
			s.LastRemovedSeconds = max(s.LastRemovedSeconds, l.gone.Seconds())
		} else {
			s.Left++
		}
		add(l.created, to, l.capacityMilliCPU)
		lifetimes[name] = report.Lifetime{From: l.created, To: l.gone, Gone: l.deleted, Label: fmt.Sprintf("%s (%s cpu)", l.hostname, l.size)}
	}
	return s, lifetimes
}
