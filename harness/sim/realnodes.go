package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/realnode"
	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/report"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// realNodes runs a run's nodes as real kubelets with containerd
// (Options.RealNodes): each pool node is a realnode.Node whose allocatable
// cpu, memory and pods are the pool's capacity. It ends pods' containers
// for the ARC emulator (arc.Exiter) on the node that runs them.
type realNodes struct {
	client     kubernetes.Interface
	kubeconfig string
	// dir holds every node's directory and the local volumes (localRoot).
	dir string

	mu    sync.Mutex
	nodes map[string]*realnode.Node
	// rejected holds the reason of each pod the kubelets failed with one;
	// placeholders the run's placeholders, true once their container ran
	// (observe).
	rejected     map[types.UID]string
	placeholders map[types.UID]bool
}

func newRealNodes(client kubernetes.Interface, kubeconfig string) (*realNodes, error) {
	if kubeconfig == "" {
		return nil, errors.New("real nodes: Options.Kubeconfig is required (the kubelets' credentials)")
	}
	// Short: containerd's socket paths live under it.
	dir, err := os.MkdirTemp("", "tsn")
	if err != nil {
		return nil, err
	}
	return &realNodes{
		client: client, kubeconfig: kubeconfig, dir: dir, nodes: map[string]*realnode.Node{},
		rejected: map[types.UID]string{}, placeholders: map[types.UID]bool{},
	}, nil
}

// checkRealNodes refuses what real nodes cannot run yet: autoscaling (the
// autoscalers' nodes are KWOK's), and hooks v0.8 without a volume (their
// init container fs-init must exit, and the one image on a real node runs
// until it is stopped).
func checkRealNodes(sc *scenario.Scenario) error {
	if sc.Autoscale != nil {
		return fmt.Errorf("scenario %s: real nodes do not autoscale", sc.Name)
	}
	for _, s := range sc.ScaleSets {
		if s.HookMode == arc.HookNoVolume {
			return fmt.Errorf("scenario %s: scale set %s: hook mode %s is not supported on real nodes (its init container would never exit)", sc.Name, s.Name, s.HookMode)
		}
	}
	return nil
}

// localRoot is where the storage emulator makes the local volumes' directories.
func (r *realNodes) localRoot() string { return filepath.Join(r.dir, "volumes") }

// start starts node name of pool and returns its allocatable.
func (r *realNodes) start(ctx context.Context, name string, pool *scenario.NodePool) (v1.ResourceList, error) {
	pods := int(pool.Capacity.Pods().Value())
	node, err := realnode.Start(ctx, r.client, realnode.Options{
		Name: name, Dir: filepath.Join(r.dir, name), Kubeconfig: r.kubeconfig,
		CPU: pool.Capacity[v1.ResourceCPU], Memory: pool.Capacity[v1.ResourceMemory], Pods: pods,
		Labels: pool.Labels, Taints: pool.Taints,
	})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.nodes[name] = node
	r.mu.Unlock()
	return node.Allocatable(ctx, r.client)
}

// observe records what the kubelets reported of a pod of the run: a
// rejection (phase Failed with a reason: OutOfcpu, ...; or an eviction) or,
// for a placeholder, a running container.
func (r *realNodes) observe(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if pod.Status.Phase == v1.PodFailed && pod.Status.Reason != "" {
		r.rejected[pod.UID] = pod.Status.Reason
	}
	if contract.IsPlaceholder(pod) {
		ran := r.placeholders[pod.UID]
		for _, c := range pod.Status.ContainerStatuses {
			ran = ran || c.State.Running != nil
		}
		r.placeholders[pod.UID] = ran
	}
}

// summary is what the kubelets did in the run.
func (r *realNodes) summary() *report.RealNodes {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &report.RealNodes{PodsRejected: map[string]int{}, Placeholders: len(r.placeholders)}
	for _, reason := range r.rejected {
		s.PodsRejected[reason]++
	}
	for _, ran := range r.placeholders {
		if ran {
			s.PlaceholdersRan++
		}
	}
	return s
}

// Exit ends pod's containers on its node (arc.Exiter), trying for up to
// 10 s: the emulator waits for a runner it ended to terminate, and ctr may
// fail where the emulated kubelet never does.
func (r *realNodes) Exit(ctx context.Context, pod *v1.Pod, exitCode int32) error {
	r.mu.Lock()
	node := r.nodes[pod.Spec.NodeName]
	r.mu.Unlock()
	if node == nil {
		return fmt.Errorf("pod %s/%s is not on a real node (node %q)", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		last = node.Exit(ctx, pod, exitCode)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

// stop stops every node and removes the directory.
func (r *realNodes) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, node := range r.nodes {
		node.Stop()
		delete(r.nodes, name)
	}
	_ = os.RemoveAll(r.dir)
}
