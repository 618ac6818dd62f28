package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
	"github.com/tandem-scheduler/tandem/harness/sim/storage"
)

// environment is one run's namespace and nodes.
type environment struct {
	client kubernetes.Interface
	ns     string

	mu sync.Mutex
	// nodes holds the live nodes' allocatable, all every node's of the run.
	nodes, all map[string]v1.ResourceList
	// pool is each node's pool; next the next index to name a pool's node.
	pool map[string]*scenario.NodePool
	next map[string]int
	// real runs the nodes as real kubelets (Options.RealNodes); nil: Node
	// objects that the kubelet emulator plays.
	real *realNodes
}

func newEnvironment(client kubernetes.Interface, ns string) *environment {
	return &environment{
		client: client, ns: ns,
		nodes: map[string]v1.ResourceList{}, all: map[string]v1.ResourceList{},
		pool: map[string]*scenario.NodePool{}, next: map[string]int{},
	}
}

// setUp creates the namespace, the StorageClass and the scenario's nodes.
func (e *environment) setUp(ctx context.Context, sc *scenario.Scenario) error {
	if err := controlplane.EnsureNamespace(ctx, e.client, e.ns); err != nil {
		return err
	}
	if _, err := e.client.StorageV1().StorageClasses().Create(ctx, storage.StorageClass(StorageClassName), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass: %w", err)
	}
	for i := range sc.Nodes {
		pool := &sc.Nodes[i]
		for range pool.Count {
			if _, _, err := e.addNode(ctx, pool); err != nil {
				return err
			}
		}
	}
	return nil
}

// addNode creates the pool's next node, <pool>-<i>.
func (e *environment) addNode(ctx context.Context, pool *scenario.NodePool) (string, v1.ResourceList, error) {
	e.mu.Lock()
	e.next[pool.Name]++
	name := fmt.Sprintf("%s-%d", pool.Name, e.next[pool.Name])
	e.mu.Unlock()
	if e.real != nil {
		alloc, err := e.real.start(ctx, name, pool)
		if err != nil {
			return "", nil, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		e.nodes[name], e.all[name], e.pool[name] = alloc, alloc, pool
		return name, alloc, nil
	}
	node, err := controlplane.CreateNode(ctx, e.client, name, pool.Capacity, pool.Labels)
	if err != nil {
		return "", nil, err
	}
	if len(pool.Taints) > 0 {
		node.Spec.Taints = pool.Taints
		if node, err = e.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return "", nil, fmt.Errorf("tainting node %s: %w", name, err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nodes[name], e.all[name], e.pool[name] = node.Status.Allocatable, node.Status.Allocatable, pool
	return name, node.Status.Allocatable, nil
}

// addExternal records a node the run did not create (Karpenter's) while
// it lives; removeExternal records it gone.
func (e *environment) addExternal(name string, allocatable v1.ResourceList) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nodes[name], e.all[name] = allocatable, allocatable
}

func (e *environment) removeExternal(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.nodes, name)
}

// staticCPU returns the capacity cpu (millicores) of the nodes the run
// created from the scenario's pools.
func (e *environment) staticCPU() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int64{}
	for name, pool := range e.pool {
		out[name] = pool.Capacity.Cpu().MilliValue()
	}
	return out
}

// addNodeLike adds a new node of the pool of node (which may be gone),
// retrying while the apiserver does not answer.
func (e *environment) addNodeLike(ctx context.Context, node string) (string, v1.ResourceList, error) {
	e.mu.Lock()
	pool := e.pool[node]
	e.mu.Unlock()
	if pool == nil {
		return "", nil, fmt.Errorf("node %s is not one of the run's", node)
	}
	var name string
	var alloc v1.ResourceList
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		name, alloc, err = e.addNode(ctx, pool)
		return err == nil, nil
	})
	return name, alloc, err
}

// deleteNode deletes a node of the run, retrying while the apiserver does
// not answer.
func (e *environment) deleteNode(ctx context.Context, node string) error {
	e.mu.Lock()
	delete(e.nodes, node)
	e.mu.Unlock()
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := e.client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
		return err == nil || apierrors.IsNotFound(err), nil
	})
}

// live returns the live nodes' allocatable.
func (e *environment) live() map[string]v1.ResourceList {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.nodes)
}

// everyNode returns the allocatable of every node the run had.
func (e *environment) everyNode() map[string]v1.ResourceList {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.all)
}

// names returns the live nodes, sorted.
func (e *environment) names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.nodes))
}

// cleanup removes the run's pods, claims, volumes and nodes (the namespace
// stays: no namespace controller runs).
func (e *environment) cleanup(logger klog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	pods := e.client.CoreV1().Pods(e.ns)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		logger.Error(err, "Deleting pods", "namespace", e.ns)
	}
	unprotect := []byte(`{"metadata":{"finalizers":null}}`)
	if claims, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range claims.Items {
			_, _ = e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(ctx, c.Name, types.MergePatchType, unprotect, metav1.PatchOptions{})
			_ = e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(ctx, c.Name, metav1.DeleteOptions{})
		}
	}
	if pvs, err := e.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == e.ns {
				_, _ = e.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, unprotect, metav1.PatchOptions{})
				_ = e.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
			}
		}
	}
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if e.real != nil {
		// Before their Node objects go: a kubelet whose node is deleted
		// keeps trying to update it.
		e.real.stop()
	}
	for _, n := range slices.Sorted(maps.Keys(e.everyNode())) {
		if err := e.client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Deleting node", "node", n)
		}
	}
}

// probe checks that no room is left held once every runner is gone: on each
// node it places, through the scheduler under test, a pod asking for the
// node's whole allocatable cpu and memory (localized for real nodes). It returns the nodes where the
// probe could not be placed.
func probe(ctx context.Context, client kubernetes.Interface, ns, schedulerName string, nodes map[string]v1.ResourceList, localize func(*v1.Pod)) ([]string, error) {
	names := map[string]string{}
	for node, alloc := range nodes {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "probe-" + node, Namespace: ns},
			Spec: v1.PodSpec{
				SchedulerName: schedulerName,
				RestartPolicy: v1.RestartPolicyNever,
				NodeSelector:  map[string]string{v1.LabelHostname: node},
				Tolerations:   []v1.Toleration{{Operator: v1.TolerationOpExists}},
				Containers: []v1.Container{{Name: "probe", Image: "probe", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: alloc[v1.ResourceCPU], v1.ResourceMemory: alloc[v1.ResourceMemory],
				}}}},
			},
		}
		if localize != nil {
			localize(pod)
		}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating probe: %w", err)
		}
		names[pod.Name] = node
	}
	var blocked []string
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		blocked = blocked[:0]
		for name, node := range names {
			pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || pod.Spec.NodeName == "" {
				blocked = append(blocked, node)
			}
		}
		return len(blocked) == 0, nil
	})
	return blocked, nil
}
