package sim

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tandem-scheduler/tandem/harness/clusterautoscaler"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// caNamespace holds the KWOK provider's ConfigMaps of a run.
const caNamespace = "kube-system"

// clusterAutoscalerOptions turns the scenario's autoscale section into
// Cluster Autoscaler's node groups and flags, every duration compressed to
// real time: one node group per instance size (min 0, max the cpu limit's
// worth), the cpu limit also as --cores-total over the whole cluster
// (staticCores: the scenario's own nodes), the boot as the registration
// delay the simulator plays, consolidateAfter as --scale-down-unneeded-time.
func clusterAutoscalerOptions(spec *scenario.Autoscale, toReal func(time.Duration) time.Duration, staticCores int64) ([]clusterautoscaler.NodeGroup, clusterautoscaler.Flags) {
	var groups []clusterautoscaler.NodeGroup
	for _, cpus := range spec.CPUs() {
		maxSize := 200 // the KWOK provider's default
		if spec.CPULimit > 0 {
			maxSize = spec.CPULimit / cpus
		}
		groups = append(groups, clusterautoscaler.NodeGroup{CPUs: cpus, MemoryPerCPU: spec.MemoryPerCPU(), Max: maxSize})
	}
	f := spec.CAFlags()
	flags := clusterautoscaler.Flags{
		ScanInterval:                  toReal(f.ScanInterval.Duration),
		Expander:                      f.Expander,
		AllowedSchedulerNames:         f.SchedulerNames,
		ScaleDownUnneededTime:         toReal(spec.Consolidation()),
		ScaleDownDelayAfterAdd:        toReal(f.ScaleDownDelayAfterAdd.Duration),
		ScaleDownUtilizationThreshold: f.ScaleDownUtilizationThreshold,
		// Its defaults, scaled like the rest.
		UnremovableNodeRecheckTimeout: toReal(5 * time.Minute),
		NodeDeleteDelayAfterTaint:     toReal(5 * time.Second),
		// A node not Ready 15 min (simulated) after its launch has failed.
		MaxNodeProvisionTime: toReal(15 * time.Minute),
		Verbosity:            1,
	}
	// More of its defaults that pace it, scaled too. Not scaled: its 2 s
	// wait for a batch of new pods (hard-coded), and its API clients.
	for flag, d := range map[string]time.Duration{
		"--scale-down-delay-after-failure":      3 * time.Minute,
		"--max-node-startup-time":               15 * time.Minute,
		"--initial-node-group-backoff-duration": 5 * time.Minute,
	} {
		flags.Extra = append(flags.Extra, flag+"="+toReal(d).String())
	}
	slices.Sort(flags.Extra)
	if spec.CPULimit > 0 {
		flags.Extra = append(flags.Extra, fmt.Sprintf("--cores-total=0:%d", staticCores+int64(spec.CPULimit)))
	}
	flags.Extra = append(flags.Extra, f.ExtraFlags...)
	return groups, flags
}

// startClusterAutoscaler writes the KWOK provider's node groups and starts
// Cluster Autoscaler, its log in dir.
func (a *autoscaler) startClusterAutoscaler(ctx context.Context, kubeconfig, dir string) error {
	_ = os.Remove(filepath.Join(dir, clusterautoscaler.Name+".log"))
	var staticCores int64
	for _, milli := range a.env.staticCPU() {
		staticCores += int64(math.Ceil(float64(milli) / 1000))
	}
	toReal := func(d time.Duration) time.Duration {
		return max(a.clock.Real(d).Round(100*time.Millisecond), 100*time.Millisecond)
	}
	groups, flags := clusterAutoscalerOptions(a.spec, toReal, staticCores)
	var err error
	a.ca, err = clusterautoscaler.Start(ctx, a.client, clusterautoscaler.Options{
		Kubeconfig: kubeconfig, Dir: dir, Namespace: caNamespace, NodeGroups: groups, Flags: flags,
	})
	if err != nil {
		return fmt.Errorf("starting cluster-autoscaler (log in %s): %w", dir, err)
	}
	a.logger.Info("Cluster Autoscaler started", "log", a.ca.Process().LogPath, "args", a.ca.Args())
	return nil
}

// boot registers a node Cluster Autoscaler created once the scenario's
// registration delay (simulated) has passed, as its kubelet would after the
// instance booted. Nothing boots once stop began.
func (a *autoscaler) boot(node *v1.Node) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return
	}
	if _, ok := a.booting[node.Name]; ok {
		return
	}
	if _, ok := a.nodes[node.Name]; ok {
		return
	}
	name, uid := node.Name, node.UID
	a.registering.Add(1)
	a.booting[name] = time.AfterFunc(a.clock.Real(a.spec.Registration()), func() {
		defer a.registering.Done()
		a.register(name, uid)
	})
	a.logger.V(2).Info("Cluster Autoscaler launched a node; it boots", "node", name, "t", a.clock.Now())
}

// register plays the node's registration (clusterautoscaler.Register),
// retrying while the apiserver does not answer, then records the node (which
// leaves booting only then, so that live never misses it).
func (a *autoscaler) register(name string, uid types.UID) {
	var node *v1.Node
	err := wait.PollUntilContextTimeout(a.ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, nil //nolint:nilerr // retried until the apiserver answers
		case n.UID != uid || n.DeletionTimestamp != nil:
			return true, nil
		}
		if err := clusterautoscaler.Register(ctx, a.client, n); err != nil {
			return apierrors.IsNotFound(err), nil
		}
		node, err = a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil || apierrors.IsNotFound(err), nil
	})
	if err == nil && node != nil && node.UID == uid {
		a.onNode(node)
		return
	}
	a.mu.Lock()
	delete(a.booting, name)
	a.mu.Unlock()
	if err != nil && a.ctx.Err() == nil {
		a.logger.Error(err, "Registering a node Cluster Autoscaler launched", "node", name)
	}
}

// stopClusterAutoscaler stops the process first (so that it launches
// nothing more), then the registrations (waiting for those under way), then
// deletes the nodes it launched, so that no later run inherits one.
func (a *autoscaler) stopClusterAutoscaler(ctx context.Context) error {
	var err error
	if a.ca != nil {
		err = a.ca.Stop()
		a.ca = nil
	}
	a.mu.Lock()
	a.stopped = true
	for name, t := range a.booting {
		if t.Stop() {
			a.registering.Done() // it will not run
		}
		delete(a.booting, name)
	}
	a.mu.Unlock()
	a.cancel()
	a.registering.Wait()
	if nodes, lerr := a.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); lerr == nil {
		for _, n := range nodes.Items {
			if clusterautoscaler.IsClusterAutoscalerNode(&n) {
				_ = a.client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
			}
		}
	}
	return err
}
