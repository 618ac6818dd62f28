// Package holdruletest is the one table of cases that every reader of
// tandem's hold rule runs: what a runner's reservation takes from its node,
// given the runner's record and the pods the API shows. The rule itself is
// contract.Holding; the plugin (pkg/workflowreservation, through
// pkg/reservations, from the scheduler's snapshot), the simulator's
// invariant checker (harness/sim/invariant) and kubectl-tandem (both from
// the API) each tell the runner's pods apart and feed it; this table keeps
// what they feed it the same.
//
// Every case is runner r1 in namespace arc (UID r1), bound to node n1 with a
// recorded reservation, and the runner's other pods, each named by its
// role. Sizes are cpu and memory: what all three readers account.
package holdruletest

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

// The runner of every case.
const (
	Namespace = "arc"
	Runner    = "r1"
	RunnerUID = types.UID("r1")
	Node      = "n1"
	// RunnerPodLabel is the label a workflow or step pod names its runner
	// with (the plugin's default runnerPodLabel).
	RunnerPodLabel = "runner-pod"
	// StepJob is the hooks v0.7.0 Job whose pods are container steps.
	StepJob = "r1-step"
)

// RunnerCreated is when runner r1 was created.
var RunnerCreated = time.Unix(1000, 0)

// Role is what a pod of a case is to the runner.
type Role string

const (
	// Workflow is labelled with the runner's name.
	Workflow Role = "workflow"
	// Step is labelled with the runner's name too, created after the
	// workflow pod (hooks v0.8 container steps).
	Step Role = "step"
	// JobStep is a pod of StepJob, which is labelled with the runner's name
	// (hooks v0.7.0 container steps).
	JobStep Role = "job-step"
	// Placeholder is the runner's placeholder (reservationMode Pods).
	Placeholder Role = "placeholder"
	// PairPod is the runner's pair pod, pending.
	PairPod Role = "pair-pod"
)

// Pod is one of the runner's other pods.
type Pod struct {
	// Name is the pod's name and UID.
	Name string
	Role Role
	// After is how long after the runner the pod was created; negative:
	// before it (an earlier runner of the same name made it).
	After time.Duration
	// Node is where the pod is bound: "" pending.
	Node string
	// Done: the pod ran to its end.
	Done bool
	// CPU and Memory are its requests.
	CPU, Memory string
}

// Case is a runner's reservation on n1 and what it takes from the node.
type Case struct {
	Name string
	// The record: Requests (one pod included), StepRequests within it,
	// HostPorts.
	Requests, StepRequests string
	HostPorts              []string
	// Stale names the pods recorded as an earlier runner's when the
	// reservation was taken.
	Stale []string
	// Pods are the runner's other pods, in the order they were created.
	Pods []Pod
	// NoWorkflowPod: the runner's job started, and no workflow pod came
	// within the grace (a job without a container).
	NoWorkflowPod bool
	// Held is what the reservation takes from n1 on top of the requests of
	// the pods the node runs, its placeholder's requests counted in it
	// rather than as the placeholder's: cpu and memory ("" nothing).
	Held string
	// HeldPorts are the host ports it holds.
	HeldPorts []string
	// KubectlTandemHeld, when set, is what kubectl-tandem shows instead of
	// Held, with KubectlTandemHeldPorts, and why it cannot know better.
	KubectlTandemHeld, KubectlTandemWhy string
	KubectlTandemHeldPorts              []string
}

// Cases is the table.
func Cases() []Case {
	const (
		size  = "cpu=2,memory=2Gi,pods=2"
		steps = "cpu=500m,memory=512Mi,pods=1"
	)
	ports := []string{"6379/TCP"}
	wf := Pod{Name: "r1-workflow", Role: Workflow, After: 30 * time.Second, Node: Node, CPU: "1500m", Memory: "1536Mi"}
	with := func(p Pod, change func(*Pod)) Pod { change(&p); return p }
	return []Case{
		{Name: "unclaimed: all of it, host ports too", Requests: size, StepRequests: steps, HostPorts: ports,
			Held: "cpu=2,memory=2Gi", HeldPorts: ports},
		{Name: "a workflow pod not bound yet claims nothing", Requests: size, StepRequests: steps, HostPorts: ports,
			Pods: []Pod{with(wf, func(p *Pod) { p.Node = "" })},
			Held: "cpu=2,memory=2Gi", HeldPorts: ports},
		{Name: "claimed: the step headroom, no ports", Requests: size, StepRequests: steps, HostPorts: ports,
			Pods: []Pod{wf},
			Held: "cpu=500m,memory=512Mi"},
		{Name: "claimed by a workflow pod larger than its part: less headroom", Requests: size, StepRequests: steps,
			Pods: []Pod{with(wf, func(p *Pod) { p.CPU = "1800m" })},
			Held: "cpu=200m,memory=512Mi"},
		{Name: "claimed without step headroom: nothing", Requests: "cpu=2,memory=2Gi,pods=1",
			Pods: []Pod{with(wf, func(p *Pod) { p.CPU, p.Memory = "2", "2Gi" })}},
		{Name: "a step pod (hooks v0.8) uses the headroom", Requests: size, StepRequests: steps,
			Pods: []Pod{wf, {Name: "r1-step-0a1b", Role: Step, After: time.Minute, Node: Node, CPU: "300m", Memory: "256Mi"}},
			Held: "cpu=200m,memory=256Mi"},
		{Name: "a step Job's pod (hooks v0.7.0) uses the headroom", Requests: size, StepRequests: steps,
			Pods: []Pod{wf, {Name: "r1-step-x2z4q", Role: JobStep, After: time.Minute, Node: Node, CPU: "300m", Memory: "256Mi"}},
			Held: "cpu=200m,memory=256Mi"},
		{Name: "step pods beyond the headroom: nothing", Requests: size, StepRequests: steps,
			Pods: []Pod{wf, {Name: "r1-step-0a1b", Role: Step, After: time.Minute, Node: Node, CPU: "1", Memory: "1Gi"}}},
		{Name: "the workflow pod finished: nothing", Requests: size, StepRequests: steps, HostPorts: ports,
			Pods: []Pod{with(wf, func(p *Pod) { p.Done = true })}},
		// Issue 20: it used the reservation up, so that any pod labelled with
		// the runner's name voided the runner's room from another node.
		{Name: "a pod of the runner on another node claims nothing: all of it", Requests: size, StepRequests: steps, HostPorts: ports,
			Pods: []Pod{with(wf, func(p *Pod) { p.Node = "n2" })},
			Held: "cpu=2,memory=2Gi", HeldPorts: ports},
		{Name: "no workflow pod after the grace: the step headroom", Requests: size, StepRequests: steps, HostPorts: ports,
			NoWorkflowPod:     true,
			Held:              "cpu=500m,memory=512Mi",
			KubectlTandemHeld: "cpu=2,memory=2Gi", KubectlTandemHeldPorts: ports, KubectlTandemWhy: "kubectl-tandem reads no EphemeralRunner, so it cannot see that the job started; " +
				"it shows the reservation held until a workflow pod comes or the runner ends"},
		{Name: "recreated runner: the earlier runner's workflow pod, created before it, claims nothing", Requests: size, StepRequests: steps, HostPorts: ports,
			Pods: []Pod{with(wf, func(p *Pod) { p.Name, p.After = "r1-workflow-old", -time.Minute })},
			Held: "cpu=2,memory=2Gi", HeldPorts: ports},
		{Name: "recreated runner: a workflow pod recorded as stale claims nothing, whatever its timestamp", Requests: size, StepRequests: steps, HostPorts: ports,
			Stale: []string{"r1-workflow-old"},
			Pods:  []Pod{with(wf, func(p *Pod) { p.Name, p.After = "r1-workflow-old", 0 })},
			Held:  "cpu=2,memory=2Gi", HeldPorts: ports},
		{Name: "recreated runner: its own workflow pod claims beside the earlier runner's", Requests: size, StepRequests: steps, HostPorts: ports,
			Stale: []string{"r1-workflow-old"},
			Pods:  []Pod{with(wf, func(p *Pod) { p.Name, p.After = "r1-workflow-old", 0 }), wf},
			Held:  "cpu=500m,memory=512Mi"},
		{Name: "its placeholder: the room counted once", Requests: size, StepRequests: steps,
			Pods: []Pod{{Name: "r1-hold", Role: Placeholder, After: time.Second, Node: Node, CPU: "2", Memory: "2Gi"}},
			Held: "cpu=2,memory=2Gi"},
		{Name: "its pair pod, pending: nothing more", Requests: size, StepRequests: steps, HostPorts: ports,
			Pods: []Pod{{Name: "r1-pair", Role: PairPod, After: -time.Second, CPU: "2500m", Memory: "2Gi"}},
			Held: "cpu=2,memory=2Gi", HeldPorts: ports},
	}
}

// RunnerPod is the case's runner: bound to n1, with its record.
func (c Case) RunnerPod() *v1.Pod {
	rec := contract.Recorded{Node: Node, Requests: List(c.Requests), Source: contract.SourceAnnotation, HostPorts: c.HostPorts, RunnerUID: RunnerUID}
	if c.StepRequests != "" {
		rec.StepRequests = List(c.StepRequests)
	}
	for _, s := range c.Stale {
		rec.StaleWorkflowPods = append(rec.StaleWorkflowPods, types.UID(s))
	}
	value, err := rec.Encode()
	if err != nil {
		panic(err)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Runner, UID: RunnerUID, CreationTimestamp: metav1.NewTime(RunnerCreated),
			Labels: map[string]string{"actions-ephemeral-runner": "True"}, Annotations: map[string]string{contract.ReservationAnnotation: value}},
		Spec: v1.PodSpec{NodeName: Node, SchedulerName: "tandem-scheduler", Containers: []v1.Container{{Name: "runner",
			Resources: v1.ResourceRequirements{Requests: List("cpu=250m,memory=256Mi")}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

// Object is the pod as the API shows it.
func (p Pod) Object() *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: p.Name, UID: types.UID(p.Name), CreationTimestamp: metav1.NewTime(RunnerCreated.Add(p.After))},
		Spec: v1.PodSpec{NodeName: p.Node, Containers: []v1.Container{{Name: "main",
			Resources: v1.ResourceRequirements{Requests: List(fmt.Sprintf("cpu=%s,memory=%s", p.CPU, p.Memory))}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
	if p.Node == "" {
		pod.Status.Phase = v1.PodPending
	}
	if p.Done {
		pod.Status.Phase = v1.PodSucceeded
	}
	controller := func(kind, name string, uid types.UID) {
		isController := true
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: name, UID: uid, Controller: &isController}}
	}
	switch p.Role {
	case Workflow, Step:
		pod.Labels = map[string]string{RunnerPodLabel: Runner}
	case JobStep:
		controller("Job", StepJob, types.UID(StepJob))
		pod.OwnerReferences[0].APIVersion = "batch/v1"
	case Placeholder:
		pod.Labels = map[string]string{contract.PlaceholderLabel: "true"}
		pod.Annotations = map[string]string{contract.PlaceholderOfAnnotation: Runner}
		controller("Pod", Runner, RunnerUID)
	case PairPod:
		pod.Labels = map[string]string{contract.PairPodLabel: "true"}
		pod.Annotations = map[string]string{contract.PairOfAnnotation: Runner}
		controller("Pod", Runner, RunnerUID)
	}
	return pod
}

// Objects are the case's pods other than the runner, in creation order.
func (c Case) Objects() []*v1.Pod {
	out := make([]*v1.Pod, 0, len(c.Pods))
	for _, p := range c.Pods {
		out = append(out, p.Object())
	}
	return out
}

// Job is StepJob, labelled with the runner's name.
func Job() *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: StepJob, UID: types.UID(StepJob), Labels: map[string]string{RunnerPodLabel: Runner}}}
}

// List parses "cpu=2,memory=2Gi" ("" is nothing).
func List(s string) v1.ResourceList {
	rl := v1.ResourceList{}
	if s == "" {
		return rl
	}
	for _, part := range strings.Split(s, ",") {
		name, value, _ := strings.Cut(part, "=")
		rl[v1.ResourceName(name)] = resource.MustParse(value)
	}
	return rl
}

// Same reports whether got holds the cpu and memory that want writes (a
// resource missing is none of it), and renders got as a case writes it.
func Same(got v1.ResourceList, want string) (bool, string) {
	w := List(want)
	same, shown := true, []string{}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		g, q := got[name], w[name]
		if g.Cmp(q) != 0 {
			same = false
		}
		if !g.IsZero() {
			shown = append(shown, string(name)+"="+g.String())
		}
	}
	return same, strings.Join(shown, ",")
}
