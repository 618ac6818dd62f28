// Package invariant watches a run from the API, as an outside observer, and
// checks tandem's promise at every pod change: on no node may the requests of
// the pods the kubelet admitted plus the room reserved for workflow pods
// exceed allocatable. It also records per-node used and reserved capacity
// over time for the report.
//
// A reservation belongs to one runner incarnation: ARC recreates a failed
// runner pod under the same name, and the failed incarnation's workflow pod
// may still run. A workflow pod claims the reservation of the runner pod of
// its label's name created before it (creation timestamps, then the order in
// which the watch delivered the pods, which is the order of their creation:
// the checker starts before the run creates any pod), never that of a runner
// pod created after it.
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
	// seq numbers the pods in the order the watch first delivered them.
	seq     map[types.UID]uint64
	nextSeq uint64
	// claimed holds the runner incarnations (pod UIDs) whose workflow pod
	// has been on a node.
	claimed map[types.UID]bool
	// flagged holds the pods whose reservation record was reported as not
	// theirs.
	flagged    map[types.UID]bool
	samples    map[string][]Sample
	violations []Violation
}

// New returns a checker for the given nodes (name -> allocatable).
// runnerPodLabel is the workflow pods' label naming their runner.
func New(clock Clock, nodes map[string]v1.ResourceList, runnerPodLabel string) *Checker {
	c := &Checker{
		clock: clock, runnerLabel: runnerPodLabel,
		allocatable: map[string]v1.ResourceList{},
		pods:        map[types.UID]*v1.Pod{},
		seq:         map[types.UID]uint64{},
		claimed:     map[types.UID]bool{},
		flagged:     map[types.UID]bool{},
		samples:     map[string][]Sample{},
		logger:      klog.Background(),
	}
	for n, alloc := range nodes {
		c.allocatable[n] = alloc
		c.samples[n] = []Sample{{}}
	}
	return c
}

// AddNode starts checking a node that joined the run.
func (c *Checker) AddNode(name string, allocatable v1.ResourceList) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allocatable[name] = allocatable
	if _, ok := c.samples[name]; !ok {
		c.samples[name] = []Sample{{T: c.clock.Now()}}
	}
	c.checkLocked(name)
}

// RemoveNode stops checking a node that went away: nothing runs there any
// more, whatever its pods' API objects still say until they are deleted.
func (c *Checker) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.allocatable, name)
	c.samples[name] = append(c.samples[name], Sample{T: c.clock.Now()})
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
		delete(c.seq, pod.UID)
		delete(c.claimed, pod.UID)
		delete(c.flagged, pod.UID)
	} else {
		if _, ok := c.seq[pod.UID]; !ok {
			c.nextSeq++
			c.seq[pod.UID] = c.nextSeq
		}
		c.pods[pod.UID] = pod
		c.checkRecordLocked(pod)
	}
	touched[pod.Spec.NodeName] = true
	if _, ok := pod.Labels[c.runnerLabel]; ok && pod.Spec.NodeName != "" && !deleted {
		// The workflow pod is on the node: from now on it, not the
		// reservation of its runner incarnation, accounts for the room
		// (whatever its fate).
		if runner := c.incarnationLocked(pod); runner != nil && !c.claimed[runner.UID] {
			c.claimed[runner.UID] = true
			touched[runner.Spec.NodeName] = true
		}
	}
	for node := range touched {
		if _, ok := c.allocatable[node]; ok {
			c.checkLocked(node)
		}
	}
}

// incarnationLocked returns the runner pod a workflow pod belongs to: of
// the name its label gives, the latest created before it; nil if there is
// none (the pod's runner incarnation is gone).
func (c *Checker) incarnationLocked(workflow *v1.Pod) *v1.Pod {
	name := workflow.Labels[c.runnerLabel]
	var runner *v1.Pod
	for _, p := range c.pods {
		if p.Namespace != workflow.Namespace || p.Name != name || !c.createdBeforeLocked(p, workflow) {
			continue
		}
		if runner == nil || c.createdBeforeLocked(runner, p) {
			runner = p
		}
	}
	return runner
}

// reservationLocked returns the reservation recorded on pod if it still
// holds room: not claimed yet by a workflow pod of this runner incarnation.
// Every record counts, whatever its runnerUID: in a run only tandem's
// Bindings write them, so a record that tandem would not honour is a defect
// to expose, not room to forget (observe flags one whose runnerUID is not
// its pod's).
func (c *Checker) reservationLocked(pod *v1.Pod) (workflowreservation.Recorded, bool) {
	r, ok, err := workflowreservation.RecordedReservation(pod)
	if !ok || err != nil || c.claimed[pod.UID] {
		return workflowreservation.Recorded{}, false
	}
	return r, true
}

// checkRecordLocked flags, once per pod, a reservation recorded for another
// pod UID than the one it is on (or for none): tandem holds nothing for such
// a record, though its own Binding wrote it.
func (c *Checker) checkRecordLocked(pod *v1.Pod) {
	if pod.Spec.NodeName == "" || c.flagged[pod.UID] {
		return
	}
	r, ok, err := workflowreservation.RecordedReservation(pod)
	if !ok || (err == nil && r.RunnerUID == pod.UID) {
		return
	}
	c.flagged[pod.UID] = true
	msg := fmt.Sprintf("runner %s/%s (uid %s): reservation recorded for uid %q", pod.Namespace, pod.Name, pod.UID, r.RunnerUID)
	if err != nil {
		msg = fmt.Sprintf("runner %s/%s (uid %s): unreadable reservation: %v", pod.Namespace, pod.Name, pod.UID, err)
	}
	v := Violation{T: c.clock.Now(), Node: pod.Spec.NodeName, Message: msg}
	c.violations = append(c.violations, v)
	c.logger.Error(nil, "INVARIANT VIOLATED: reservation record does not belong to its pod", "node", v.Node, "t", v.T, "detail", msg)
}

// createdBeforeLocked orders pods by creation: their timestamps (seconds),
// then the order in which the watch delivered them.
func (c *Checker) createdBeforeLocked(a, b *v1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return c.seq[a.UID] < c.seq[b.UID]
}

// checkLocked recomputes a node's used and reserved room and records a
// violation if it exceeds allocatable.
func (c *Checker) checkLocked(node string) {
	used, reserved := v1.ResourceList{}, v1.ResourceList{}
	// parts names what makes up the sums, for a violation's log line.
	var parts []string
	for _, p := range c.pods {
		if p.Spec.NodeName != node || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		if p.Status.Phase == v1.PodRunning {
			req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
			addTo(used, req)
			addTo(used, v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)})
			parts = append(parts, fmt.Sprintf("%s(uid %s) runs cpu=%s", p.Name, p.UID, req.Cpu()))
		}
		if r, ok := c.reservationLocked(p); ok && r.Node == node {
			addTo(reserved, r.Requests)
			parts = append(parts, fmt.Sprintf("%s(uid %s) reserves cpu=%s", p.Name, p.UID, r.Requests.Cpu()))
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
			sort.Strings(parts)
			c.logger.Error(nil, "INVARIANT VIOLATED: node overcommitted", "node", node, "t", now, "detail", v.Message, "pods", parts)
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
		if _, ok := c.reservationLocked(p); ok {
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}.String())
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
