// Package invariant watches a run from the API, as an outside observer, and
// checks tandem's promise at every pod change: on no node may the requests of
// the pods the kubelet admitted plus the room reserved for workflow pods
// exceed allocatable. It also records per-node used and reserved capacity
// over time for the report.
package invariant

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
)

// Sample is a node's state from T on (simulated time), in millicores and bytes.
type Sample struct {
	T              time.Duration
	UsedMilliCPU   int64
	ReservedMilli  int64
	UsedMemory     int64
	ReservedMemory int64
}

// Violation is a moment when a node was overcommitted.
type Violation struct {
	T       time.Duration
	Node    string
	Message string
}

// Clock gives the simulated time of an observation.
type Clock interface{ Now() time.Duration }

// Checker is fed by pod informer events.
type Checker struct {
	clock       Clock
	runnerLabel string
	logger      klog.Logger

	mu          sync.Mutex
	allocatable map[string]v1.ResourceList
	pods        map[types.UID]*v1.Pod
	// claimed holds the runners whose workflow pod has been on the node.
	claimed    map[types.NamespacedName]bool
	samples    map[string][]Sample
	violations []Violation
}

// New returns a checker for the given nodes (name -> allocatable).
// runnerPodLabel is the workflow pods' label naming their runner.
func New(clock Clock, nodes map[string]v1.ResourceList, runnerPodLabel string) *Checker {
	c := &Checker{
		clock: clock, runnerLabel: runnerPodLabel,
		allocatable: nodes,
		pods:        map[types.UID]*v1.Pod{},
		claimed:     map[types.NamespacedName]bool{},
		samples:     map[string][]Sample{},
		logger:      klog.Background(),
	}
	for n := range nodes {
		c.samples[n] = []Sample{{}}
	}
	return c
}

// Start registers the checker on factory's pod informer.
func (c *Checker) Start(ctx context.Context, factory informers.SharedInformerFactory) error {
	c.logger = klog.FromContext(ctx)
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observe(obj, false) },
		UpdateFunc: func(_, obj any) { c.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.observe(obj, true)
		},
	})
	return err
}

func (c *Checker) observe(obj any, deleted bool) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	touched := map[string]bool{}
	if old := c.pods[pod.UID]; old != nil {
		touched[old.Spec.NodeName] = true
	}
	if deleted {
		delete(c.pods, pod.UID)
	} else {
		c.pods[pod.UID] = pod
	}
	touched[pod.Spec.NodeName] = true
	if runner, ok := pod.Labels[c.runnerLabel]; ok && pod.Spec.NodeName != "" {
		// The workflow pod is on the node: from now on it, not the
		// reservation, accounts for the room (whatever its fate).
		c.claimed[types.NamespacedName{Namespace: pod.Namespace, Name: runner}] = true
		for _, p := range c.pods {
			if p.Namespace == pod.Namespace && p.Name == runner {
				touched[p.Spec.NodeName] = true
			}
		}
	}
	for node := range touched {
		if _, ok := c.allocatable[node]; ok {
			c.checkLocked(node)
		}
	}
}

// checkLocked recomputes a node's used and reserved room and records a
// violation if it exceeds allocatable.
func (c *Checker) checkLocked(node string) {
	used, reserved := v1.ResourceList{}, v1.ResourceList{}
	for _, p := range c.pods {
		if p.Spec.NodeName != node || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		if p.Status.Phase == v1.PodRunning {
			addTo(used, resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
			addTo(used, v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)})
		}
		if r, ok, err := workflowreservation.RecordedReservation(p); ok && err == nil && r.Node == node &&
			!c.claimed[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] {
			addTo(reserved, r.Requests)
		}
	}
	now := c.clock.Now()
	total := used.DeepCopy()
	addTo(total, reserved)
	for name, q := range total {
		alloc, ok := c.allocatable[node][name]
		if q.Sign() > 0 && (!ok || q.Cmp(alloc) > 0) {
			v := Violation{T: now, Node: node, Message: fmt.Sprintf("%s: admitted %s + reserved %s > allocatable %s",
				name, show(used, name), show(reserved, name), alloc.String())}
			c.violations = append(c.violations, v)
			c.logger.Error(nil, "INVARIANT VIOLATED: node overcommitted", "node", node, "t", now, "detail", v.Message)
		}
	}
	s := Sample{
		T:              now,
		UsedMilliCPU:   used.Cpu().MilliValue(),
		ReservedMilli:  reserved.Cpu().MilliValue(),
		UsedMemory:     used.Memory().Value(),
		ReservedMemory: reserved.Memory().Value(),
	}
	list := c.samples[node]
	if last := list[len(list)-1]; last.UsedMilliCPU == s.UsedMilliCPU && last.ReservedMilli == s.ReservedMilli &&
		last.UsedMemory == s.UsedMemory && last.ReservedMemory == s.ReservedMemory {
		return
	}
	c.samples[node] = append(list, s)
}

func show(rl v1.ResourceList, name v1.ResourceName) string {
	q := rl[name]
	return q.String()
}

func addTo(dst, src v1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

// Violations returns the violations seen so far.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Violation(nil), c.violations...)
}

// Reservations returns the runners (namespace/name) whose recorded
// reservation still holds room: bound, non-terminal, workflow pod not yet on
// the node.
func (c *Checker) Reservations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.pods {
		if p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		if _, ok, _ := workflowreservation.RecordedReservation(p); ok && !c.claimed[key] {
			out = append(out, key.String())
		}
	}
	sort.Strings(out)
	return out
}

// Samples returns each node's timeline.
func (c *Checker) Samples() map[string][]Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]Sample, len(c.samples))
	for n, s := range c.samples {
		out[n] = append([]Sample(nil), s...)
	}
	return out
}
