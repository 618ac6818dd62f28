// Package invariant watches a run from the API, as an outside observer, and
// checks tandem's promise at every pod change: on no node may the requests of
// the pods the kubelet admitted plus the room still held for runners' pods
// exceed allocatable. It also records per-node used and held capacity over
// time for the report.
//
// What a recorded reservation (contract.Recorded, on its runner
// pod) holds follows tandem's hold rule (contract.Holding), which the
// plugin applies too:
//   - before its workflow pod is on a node: the recorded requests, less the
//     requests of the runner's step pods on the reserved node;
//   - once the workflow pod is there: the step headroom, i.e. the recorded
//     requests less the workflow pod's, at most the recorded stepRequests,
//     less the runner's step pods there;
//   - once the workflow pod is gone or ended: nothing (a pod of the runner on
//     another node is not its workflow pod: it claims nothing);
//   - a job without a container: only the step headroom, less the runner's
//     step pods, once the plugin released the rest, which the checker knows
//     from the API as the plugin does: the runner's EphemeralRunner showed a
//     job (status.jobId or jobRequestId) that is not the one recorded as
//     stale when the reservation was taken, and no workflow pod (bound or
//     not) existed noWorkflowPodGrace (real time) after that. The checker's
//     timer is a tenth shorter than the plugin's: the two timers start on
//     two informers' events, and a checker that released later than the
//     plugin would report as a violation room the plugin rightly gave away.
//
// The runner's pods are told apart as the plugin tells them: the first pod
// labelled runner-pod=<runner> of the incarnation that is bound to a node is
// its workflow pod; later such pods are step pods (hooks v0.8); so are pods
// controlled by a Job labelled runner-pod=<runner> (hooks v0.7.0, the next
// hook).
//
// A reservation belongs to one runner incarnation: ARC recreates a failed
// runner pod under the same name, and the failed incarnation's workflow pod
// may still run. A workflow or step pod belongs to the runner pod of its
// label's name created before it (creation timestamps, then the order in
// which the watch delivered the pods, which is the order of their creation:
// the checker starts before the run creates any pod), never that of a runner
// pod created after it, nor that of a runner whose record names it among
// the stale workflow pods of an earlier runner (as the plugin reads it).
package invariant

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
)

// Sample is a node's state from T on (simulated time), in millicores and
// bytes. Reserved is room held for runners' pods that are not there (see
// the package comment); ReservedStepMilli is the part of ReservedMilli held
// as step headroom only: after the workflow pod's claim, or after the grace
// released the rest of a job without a container.
type Sample struct {
	T                 time.Duration
	UsedMilliCPU      int64
	ReservedMilli     int64
	ReservedStepMilli int64
	UsedMemory        int64
	ReservedMemory    int64
}

// Violation is a moment when a node was overcommitted.
type Violation struct {
	T       time.Duration
	Node    string
	Message string
}

// Clock gives the simulated time of an observation.
type Clock interface{ Now() time.Duration }

// Checker is fed by pod, Job and EphemeralRunner informer events.
type Checker struct {
	clock       Clock
	runnerLabel string
	logger      klog.Logger
	// afterFunc runs f after d of real time (time.AfterFunc; tests replace it).
	afterFunc func(d time.Duration, f func())

	mu          sync.Mutex
	allocatable map[string]v1.ResourceList
	pods        map[types.UID]*v1.Pod
	// seq numbers the pods in the order the watch first delivered them.
	seq     map[types.UID]uint64
	nextSeq uint64
	// workflow holds, per runner incarnation (pod UID), the workflow pod
	// that claimed its reservation: the first pod labelled with the
	// runner's name, of the incarnation, seen bound to a node.
	workflow map[types.UID]types.UID
	// jobs holds the step Jobs (UID) and the runner their label names.
	jobs map[types.UID]types.NamespacedName
	// grace is noWorkflowPodGrace; zero: EphemeralRunners are not watched.
	grace time.Duration
	// erJob is the job each EphemeralRunner shows, by its name.
	erJob map[types.NamespacedName]string
	// recorded marks the runner pods seen bound with a reservation record;
	// waiting those whose grace started (it starts once, as the plugin's);
	// released those the grace released.
	recorded map[types.UID]bool
	waiting  map[types.UID]bool
	released map[types.UID]bool
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
		clock: clock, runnerLabel: runnerPodLabel, afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		allocatable: map[string]v1.ResourceList{},
		pods:        map[types.UID]*v1.Pod{},
		seq:         map[types.UID]uint64{},
		workflow:    map[types.UID]types.UID{},
		jobs:        map[types.UID]types.NamespacedName{},
		erJob:       map[types.NamespacedName]string{},
		recorded:    map[types.UID]bool{},
		waiting:     map[types.UID]bool{},
		released:    map[types.UID]bool{},
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

// Start registers the checker on factory's pod and Job informers.
func (c *Checker) Start(ctx context.Context, factory informers.SharedInformerFactory) error {
	c.logger = klog.FromContext(ctx)
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observe(obj, false) },
		UpdateFunc: func(_, obj any) { c.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.observe(obj, true)
		},
	}); err != nil {
		return err
	}
	_, err := factory.Batch().V1().Jobs().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.observeJob,
		UpdateFunc: func(_, obj any) { c.observeJob(obj) },
	})
	return err
}

// StartEphemeralRunners registers the checker on an informer of ARC's
// EphemeralRunners, to release reservations of jobs without a container as
// the plugin does, grace (its noWorkflowPodGrace) after the job started.
func (c *Checker) StartEphemeralRunners(informer cache.SharedIndexInformer, grace time.Duration) error {
	c.mu.Lock()
	c.grace = grace
	c.mu.Unlock()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.observeEphemeralRunner,
		UpdateFunc: func(_, obj any) { c.observeEphemeralRunner(obj) },
	})
	return err
}

// observeJob learns a step Job: pods it controls are its runner's.
func (c *Checker) observeJob(obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	runner, ok := job.Labels[c.runnerLabel]
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, known := c.jobs[job.UID]; known {
		return
	}
	c.jobs[job.UID] = types.NamespacedName{Namespace: job.Namespace, Name: runner}
	// Its pods may have come first: they count from now on.
	touched := map[string]bool{}
	for _, p := range c.pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == job.UID {
			touched[p.Spec.NodeName] = true
		}
	}
	c.checkNodesLocked(touched)
}

// observeEphemeralRunner starts the grace of the reservation of the runner
// whose EphemeralRunner now shows a job it did not show when the
// reservation was taken, if no workflow pod claimed it yet.
func (c *Checker) observeEphemeralRunner(obj any) {
	er, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	job := contract.EphemeralRunnerJob(er)
	if job == "" {
		return
	}
	key := types.NamespacedName{Namespace: er.GetNamespace(), Name: er.GetName()}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erJob[key] = job
	if c.grace <= 0 {
		return
	}
	for _, p := range c.pods {
		if p.Namespace == key.Namespace && p.Name == key.Name {
			c.startGraceLocked(p)
		}
	}
}

// startGraceLocked starts the grace of runner's reservation if its
// EphemeralRunner shows a job that is not the recorded stale one and no
// workflow pod claimed it yet.
func (c *Checker) startGraceLocked(runner *v1.Pod) {
	job := c.erJob[types.NamespacedName{Namespace: runner.Namespace, Name: runner.Name}]
	if c.grace <= 0 || job == "" || !c.recorded[runner.UID] || c.waiting[runner.UID] {
		return
	}
	rec, ok, err := contract.RecordedReservation(runner)
	if !ok || err != nil || rec.StaleJob == job {
		return
	}
	if _, claimed := c.workflow[runner.UID]; claimed {
		return
	}
	c.waiting[runner.UID] = true
	uid := runner.UID
	c.afterFunc(c.grace-c.grace/10, func() { c.releaseWithoutWorkflowPod(uid) })
}

// releaseWithoutWorkflowPod drops the reservation of a runner whose job
// started grace ago and whose workflow pod did not come.
func (c *Checker) releaseWithoutWorkflowPod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pods[uid]
	if _, claimed := c.workflow[uid]; p == nil || claimed {
		return
	}
	// A workflow pod that exists but is not bound yet still claims it.
	for _, wf := range c.pods {
		if wf.Namespace == p.Namespace && wf.Labels[c.runnerLabel] == p.Name && !contract.IsTerminal(wf) && c.incarnationLocked(wf, p.Name) == p && contract.MayClaimOn(wf, p.Spec.NodeName) {
			return
		}
	}
	c.released[uid] = true
	c.logger.V(2).Info("Reservation of a job without a workflow pod released", "runner", klog.KObj(p), "node", p.Spec.NodeName, "grace", c.grace)
	c.checkNodesLocked(map[string]bool{p.Spec.NodeName: true})
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
		delete(c.workflow, pod.UID)
		delete(c.flagged, pod.UID)
		delete(c.recorded, pod.UID)
		delete(c.waiting, pod.UID)
		delete(c.released, pod.UID)
	} else {
		if _, ok := c.seq[pod.UID]; !ok {
			c.nextSeq++
			c.seq[pod.UID] = c.nextSeq
		}
		c.pods[pod.UID] = pod
		if tandemOwn(pod) {
			// A placeholder or pair pod: never a runner or workflow pod.
			touched[pod.Spec.NodeName] = true
			c.checkNodesLocked(touched)
			return
		}
		c.checkRecordLocked(pod)
		if _, ok := pod.Annotations[contract.ReservationAnnotation]; ok && pod.Spec.NodeName != "" && !c.recorded[pod.UID] {
			// Its EphemeralRunner may have shown the job first.
			c.recorded[pod.UID] = true
			c.startGraceLocked(pod)
		}
	}
	touched[pod.Spec.NodeName] = true
	if _, ok := pod.Labels[c.runnerLabel]; ok && pod.Spec.NodeName != "" && !deleted {
		// The first such pod of the incarnation on the runner's node is its
		// workflow pod: from now on its claim decides what the reservation
		// holds. One on another node claims nothing.
		if runner := c.incarnationLocked(pod, pod.Labels[c.runnerLabel]); runner != nil {
			if _, claimed := c.workflow[runner.UID]; !claimed && pod.Spec.NodeName == runner.Spec.NodeName {
				c.workflow[runner.UID] = pod.UID
			}
			touched[runner.Spec.NodeName] = true
		}
	}
	c.checkNodesLocked(touched)
}

func (c *Checker) checkNodesLocked(nodes map[string]bool) {
	for node := range nodes {
		if _, ok := c.allocatable[node]; ok {
			c.checkLocked(node)
		}
	}
}

// incarnationLocked returns the runner pod a pod labelled (or whose Job is
// labelled) with runner name belongs to: of that name, the latest created
// before it, unless that runner's record names the pod stale; nil if there
// is none (the pod's runner incarnation is gone).
func (c *Checker) incarnationLocked(pod *v1.Pod, name string) *v1.Pod {
	var runner *v1.Pod
	for _, p := range c.pods {
		if p.Namespace != pod.Namespace || p.Name != name || !c.createdBeforeLocked(p, pod) {
			continue
		}
		if runner == nil || c.createdBeforeLocked(runner, p) {
			runner = p
		}
	}
	if runner != nil {
		// A pod that existed when the runner's reservation was taken is an
		// earlier runner's, whatever its timestamp (whole seconds) says.
		if rec, ok, err := contract.RecordedReservation(runner); ok && err == nil && slices.Contains(rec.StaleWorkflowPods, pod.UID) {
			return nil
		}
	}
	return runner
}

// stepJobLocked returns, for a pod controlled by a Job, the runner its Job
// names; known is false while the Job has not been seen (the pod's role is
// not known yet).
func (c *Checker) stepJobLocked(pod *v1.Pod) (runner string, job, known bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "Job" {
		return "", false, true
	}
	r, known := c.jobs[ref.UID]
	if !known || r.Namespace != pod.Namespace {
		return "", true, known
	}
	return r.Name, true, true
}

// checkRecordLocked flags, once per pod, a reservation recorded for another
// pod UID than the one it is on (or for none): tandem holds nothing for such
// a record, though its own Binding wrote it.
func (c *Checker) checkRecordLocked(pod *v1.Pod) {
	if pod.Spec.NodeName == "" || c.flagged[pod.UID] {
		return
	}
	r, ok, err := contract.RecordedReservation(pod)
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

// podAmount is a pod's request as Kubernetes computes it, plus one pod.
func podAmount(p *v1.Pod) v1.ResourceList {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	addTo(req, v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)})
	return req
}

// heldLocked is what runner's reservation rec holds on its node, given the
// node's non-terminal pods; step says it is step headroom after the claim.
func (c *Checker) heldLocked(runner *v1.Pod, rec contract.Recorded, onNode []*v1.Pod) (held v1.ResourceList, step bool) {
	wfUID, claimed := c.workflow[runner.UID]
	steps := v1.ResourceList{}
	for _, p := range onNode {
		if p.UID == wfUID || p.Namespace != runner.Namespace || tandemOwn(p) {
			continue
		}
		name, viaJob, _ := c.stepJobLocked(p)
		if !viaJob {
			name = p.Labels[c.runnerLabel]
		}
		if name != runner.Name || c.incarnationLocked(p, name) != runner {
			continue
		}
		addTo(steps, podAmount(p))
	}
	h := contract.Holding{Size: contract.AmountFromList(rec.Requests), Step: contract.AmountFromList(rec.StepRequests)}
	on := contract.RunnerPods{Steps: contract.AmountFromList(steps)}
	switch wf := c.pods[wfUID]; {
	case c.released[runner.UID]:
		// A job without a container may still run container steps: the
		// plugin keeps the step headroom.
		h.NoWorkflowPod, step = true, true
	case !claimed:
	case wf == nil || contract.IsTerminal(wf) || wf.Spec.NodeName != rec.Node:
		h.Ended = true
	default:
		on.Workflow, on.WorkflowRequest, step = true, contract.AmountFromList(podAmount(wf)), true
	}
	a, _ := h.Holds(on)
	return a.ToList(), step
}

// checkLocked recomputes a node's used and held room and records a
// violation if it exceeds allocatable.
func (c *Checker) checkLocked(node string) {
	used, reserved, reservedStep := v1.ResourceList{}, v1.ResourceList{}, v1.ResourceList{}
	// parts names what makes up the sums, for a violation's log line.
	var parts []string
	var onNode []*v1.Pod
	for _, p := range c.pods {
		if p.Spec.NodeName == node && !contract.IsTerminal(p) {
			onNode = append(onNode, p)
		}
	}
	holds := c.placeholdersLocked(node, onNode)
	for _, p := range onNode {
		if ph := c.holdOf(p, holds); ph != nil {
			// A placeholder runs: the kubelet counts its requests (and its
			// pod slot), and its runner's reservation below counts at least
			// as much, so it is counted there and only there.
			parts = append(parts, fmt.Sprintf("%s(uid %s) placeholder runs cpu=%s, counted in its runner's reservation", p.Name, p.UID, ph.Cpu()))
			continue
		}
		if p.Status.Phase == v1.PodRunning {
			if _, _, known := c.stepJobLocked(p); !known {
				// A Job's pod before its Job: its role (a step pod, which
				// may use its runner's headroom) is not known yet.
				parts = append(parts, fmt.Sprintf("%s(uid %s) not counted yet (its Job is not seen yet)", p.Name, p.UID))
				continue
			}
			req := podAmount(p)
			addTo(used, req)
			parts = append(parts, fmt.Sprintf("%s(uid %s) runs cpu=%s", p.Name, p.UID, req.Cpu()))
		}
		rec, ok, err := contract.RecordedReservation(p)
		if !ok || err != nil || rec.Node != node {
			continue
		}
		held, step := c.heldLocked(p, rec, onNode)
		if ph, ok := holds[p.UID]; ok {
			held = atLeast(held, ph)
		}
		addTo(reserved, held)
		if step {
			addTo(reservedStep, held)
		}
		parts = append(parts, fmt.Sprintf("%s(uid %s) holds cpu=%s (step headroom: %v)", p.Name, p.UID, held.Cpu(), step))
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
		T:                 now,
		UsedMilliCPU:      used.Cpu().MilliValue(),
		ReservedMilli:     reserved.Cpu().MilliValue(),
		ReservedStepMilli: reservedStep.Cpu().MilliValue(),
		UsedMemory:        used.Memory().Value(),
		ReservedMemory:    reserved.Memory().Value(),
	}
	list := c.samples[node]
	if last := list[len(list)-1]; last.UsedMilliCPU == s.UsedMilliCPU && last.ReservedMilli == s.ReservedMilli &&
		last.ReservedStepMilli == s.ReservedStepMilli && last.UsedMemory == s.UsedMemory && last.ReservedMemory == s.ReservedMemory {
		return
	}
	c.samples[node] = append(list, s)
}

// tandemOwn reports whether pod is one of the plugin's own pods: a
// placeholder (reservationMode: Pods) or a pair pod. Neither is a runner,
// a workflow or a step pod. (A pair pod is told by its label alone: the
// plugin's full check is not exported.)
func tandemOwn(pod *v1.Pod) bool {
	return contract.IsPlaceholder(pod) || pod.Labels[contract.PairPodLabel] == "true"
}

// placeholdersLocked returns, by runner UID, the requests (one pod
// included) of the Running
// placeholders on node whose runner pod is there too, not terminal, and
// holds a reservation recorded for node: what those runners' reservations
// hold as a real pod. A placeholder of any other runner (gone, or reserving
// elsewhere) is an ordinary pod.
func (c *Checker) placeholdersLocked(node string, onNode []*v1.Pod) map[types.UID]v1.ResourceList {
	holds := map[types.UID]v1.ResourceList{}
	for _, p := range onNode {
		if p.Status.Phase != v1.PodRunning || !contract.IsPlaceholder(p) {
			continue
		}
		runner := c.pods[metav1.GetControllerOf(p).UID]
		if runner == nil || contract.IsTerminal(runner) || !contract.IsPlaceholderOf(p, runner) {
			continue
		}
		if rec, ok, err := contract.RecordedReservation(runner); ok && err == nil && rec.Node == node {
			holds[runner.UID] = podAmount(p)
		}
	}
	return holds
}

// holdOf returns the requests of p if it is a placeholder that holds
// (placeholdersLocked) its runner's reservation, else nil.
func (c *Checker) holdOf(p *v1.Pod, holds map[types.UID]v1.ResourceList) v1.ResourceList {
	if !contract.IsPlaceholder(p) || p.Status.Phase != v1.PodRunning {
		return nil
	}
	return holds[metav1.GetControllerOf(p).UID]
}

// atLeast returns, per resource of a or b, the larger amount.
func atLeast(a, b v1.ResourceList) v1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = v1.ResourceList{}
	}
	for name, q := range b {
		if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
			out[name] = q.DeepCopy()
		}
	}
	return out
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

func nonZero(rl v1.ResourceList) bool {
	for _, q := range rl {
		if q.Sign() > 0 {
			return true
		}
	}
	return false
}

// Violations returns the violations seen so far.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Violation(nil), c.violations...)
}

// Reservations returns the runners (namespace/name) whose recorded
// reservation still holds room: bound, non-terminal, holding something by
// the rule of the package comment.
func (c *Checker) Reservations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	onNode := map[string][]*v1.Pod{}
	for _, p := range c.pods {
		if p.Spec.NodeName != "" && !contract.IsTerminal(p) {
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
		}
	}
	var out []string
	for _, pods := range onNode {
		for _, p := range pods {
			rec, ok, err := contract.RecordedReservation(p)
			if !ok || err != nil {
				continue
			}
			if held, _ := c.heldLocked(p, rec, onNode[rec.Node]); nonZero(held) {
				out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}.String())
			}
		}
	}
	// Placeholders and pair pods that outlived their runner's need.
	for _, p := range c.pods {
		if tandemOwn(p) && !contract.IsTerminal(p) && p.DeletionTimestamp == nil {
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
