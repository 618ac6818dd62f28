package kubectltandem

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
)

// PodKind is what a pod is to tandem.
type PodKind string

// The kinds of pods explain tells apart.
const (
	KindRunner   PodKind = "runner"
	KindWorkflow PodKind = "workflow pod"
	KindStep     PodKind = "container-step pod"
	KindOther    PodKind = "pod"
	KindPair     PodKind = "pair pod"
)

// Explanation says why a pod is pending, or what it holds once bound.
type Explanation struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string    `json:"namespace"`
	Name            string    `json:"name"`
	UID             types.UID `json:"uid"`
	Kind            PodKind   `json:"podKind"`
	// KindWhy says how the kind was recognised.
	KindWhy string `json:"podKindWhy"`
	// Runner is a workflow or step pod's runner.
	Runner        string      `json:"runner,omitempty"`
	SchedulerName string      `json:"schedulerName"`
	Phase         v1.PodPhase `json:"phase"`
	// Node is where the pod is bound, "" while pending.
	Node string `json:"node,omitempty"`
	// Scheduled is its PodScheduled condition.
	Scheduled *Condition `json:"scheduled,omitempty"`
	Events    []Event    `json:"events,omitempty"`
	// Requests is the pod's own request, one pod included.
	Requests v1.ResourceList `json:"requests"`
	// Size is a runner's workflow pod size.
	Size *Size `json:"size,omitempty"`
	// Need is what the pod needs free on a node: a runner its own request
	// and its workflow pod's (step headroom included), any other pod its
	// own request.
	Need v1.ResourceList `json:"need"`
	// Reservation is a runner's own, a workflow or step pod's runner's.
	Reservation *Reservation `json:"reservation,omitempty"`
	// Nodes are the nodes the pod may go to while pending (its node once
	// bound), with their room after reservations.
	Nodes []NodeUsage `json:"nodes,omitempty"`
	// Excluded are the nodes it may not go to, and why.
	Excluded []Excluded `json:"excluded,omitempty"`
	Verdict  string     `json:"verdict"`
	Notes    []string   `json:"notes,omitempty"`
}

// Condition is a pod condition.
type Condition struct {
	Status  v1.ConditionStatus `json:"status"`
	Reason  string             `json:"reason,omitempty"`
	Message string             `json:"message,omitempty"`
	Since   time.Time          `json:"since"`
}

// Size is how big a runner's workflow pod is, as far as kubectl-tandem
// can tell.
type Size struct {
	// Workflow is the workflow pod's size (one pod included), step
	// headroom excluded; nil when unknown.
	Workflow v1.ResourceList `json:"workflow,omitempty"`
	// Step is the step headroom (one pod included).
	Step v1.ResourceList `json:"step,omitempty"`
	// From says where the size came from.
	From string `json:"from"`
	// Problems are sizing sources kubectl-tandem could not read.
	Problems []string `json:"problems,omitempty"`
	// Annotations are the runner's sizing annotations as written.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Excluded is a node a pod may not go to.
type Excluded struct {
	Node string `json:"node"`
	Why  string `json:"why"`
}

// explain explains pod from a snapshot of the whole cluster and the pod's
// events.
func explain(logger klog.Logger, s *Snapshot, rs []Reservation, pod *v1.Pod, events []Event) *Explanation {
	e := &Explanation{
		TypeMeta: kind("Explanation"), Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, SchedulerName: pod.Spec.SchedulerName,
		Phase: pod.Status.Phase, Node: pod.Spec.NodeName, Events: events, Requests: podRequests(pod),
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			e.Scheduled = &Condition{Status: c.Status, Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
		}
	}
	e.Kind, e.KindWhy, e.Runner = s.kindOf(pod)
	find := func(ns, name string) *Reservation {
		for i := range rs {
			if rs[i].Namespace == ns && rs[i].Runner == name {
				return &rs[i]
			}
		}
		return nil
	}
	switch e.Kind {
	case KindRunner:
		e.Reservation = find(pod.Namespace, pod.Name)
		e.Size = sizeOf(pod, e.Reservation, e.Scheduled)
		e.Need = add(e.Requests, e.Size.Workflow, e.Size.Step)
	case KindWorkflow, KindStep:
		e.Reservation = find(pod.Namespace, e.Runner)
		e.Need = e.Requests
	default:
		e.Need = e.Requests
	}
	usages := nodeUsage(s, rs)
	switch {
	case e.Kind == KindPair:
		e.Verdict = fmt.Sprintf("tandem never binds it: it stands for runner %s and its workflow pod (%s) so that cluster autoscalers add a node where both fit; it goes once the runner is bound or gone",
			e.Runner, amount(e.Requests))
	case contract.IsTerminal(pod):
		e.Verdict = fmt.Sprintf("the pod has %s: it holds nothing", strings.ToLower(string(pod.Status.Phase)))
	case pod.Spec.NodeName != "":
		for _, u := range usages {
			if u.Name == pod.Spec.NodeName {
				e.Nodes = append(e.Nodes, u)
			}
		}
		e.Verdict = e.boundVerdict(s, pod)
	default:
		nodes, excluded := candidateNodes(logger, pod, s.Nodes)
		e.Excluded = excluded
		for _, u := range usages {
			if slices.ContainsFunc(nodes, func(n *v1.Node) bool { return n.Name == u.Name }) {
				e.Nodes = append(e.Nodes, u)
			}
		}
		e.Verdict = e.pendingVerdict(s, pod)
	}
	e.Notes = append(e.Notes, s.Notes...)
	return e
}

// kindOf says what pod is to tandem and, for a workflow or step pod, whose.
func (s *Snapshot) kindOf(pod *v1.Pod) (kind PodKind, why, runner string) {
	if name := pod.Annotations[contract.PairOfAnnotation]; pod.Labels[contract.PairPodLabel] == "true" && name != "" {
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Pod" && ref.Name == name {
			return KindPair, fmt.Sprintf("label %s, controlled by runner %s", contract.PairPodLabel, name), name
		}
	}
	if s.rules.isRunner(pod) {
		return KindRunner, "matches the runner selector " + s.rules.RunnerSelector.String(), ""
	}
	if name := pod.Labels[s.rules.RunnerPodLabel]; name != "" {
		why = fmt.Sprintf("label %s=%s", s.rules.RunnerPodLabel, name)
		if r := s.pod(pod.Namespace, name); r != nil && pod.CreationTimestamp.Before(&r.CreationTimestamp) {
			return KindWorkflow, why + ", created before its runner: of an earlier runner of that name", name
		}
		if oldest := s.oldestWorkflowPod(pod.Namespace, name); oldest != nil && oldest.UID != pod.UID {
			return KindStep, why + fmt.Sprintf(", and %s is the runner's workflow pod", oldest.Name), name
		}
		return KindWorkflow, why, name
	}
	if name := s.jobRunner(pod); name != "" {
		return KindStep, fmt.Sprintf("its Job carries label %s=%s", s.rules.RunnerPodLabel, name), name
	}
	return KindOther, "neither a runner nor labelled " + s.rules.RunnerPodLabel, ""
}

// oldestWorkflowPod is the oldest pod labelled with the runner's name
// itself, of the runner's current incarnation when the runner exists.
func (s *Snapshot) oldestWorkflowPod(namespace, runner string) *v1.Pod {
	r := s.pod(namespace, runner)
	for _, rp := range s.runnerPods(types.NamespacedName{Namespace: namespace, Name: runner}) {
		if rp.viaJob || (r != nil && rp.pod.CreationTimestamp.Before(&r.CreationTimestamp)) {
			continue
		}
		return rp.pod
	}
	return nil
}

// postFilterMessage is the line tandem adds to a runner's PodScheduled
// message when it fits nowhere (docs/troubleshooting.md): "runner NS/NAME
// needs cpu=500m and its workflow pod cpu=2500m,memory=5Gi (from
// hook-template); no node has room for both".
var postFilterMessage = regexp.MustCompile(`its workflow pod (\S+) \(from ([a-z-]+)\)`)

// sizeOf finds a runner's workflow size: from its recorded reservation once
// bound, else as the scheduler's last message put it, else from its sizing
// annotations; the hook template itself is not read.
func sizeOf(pod *v1.Pod, r *Reservation, scheduled *Condition) *Size {
	sz := &Size{}
	for _, a := range []string{contract.WorkflowRequestsAnnotation, contract.StepRequestsAnnotation, contract.HostPortsAnnotation} {
		if v, ok := pod.Annotations[a]; ok {
			if sz.Annotations == nil {
				sz.Annotations = map[string]string{}
			}
			sz.Annotations[a] = v
		}
	}
	if r != nil && r.Phase != PhaseInvalid {
		sz.Workflow = atLeastZero(sub(r.Requests, r.StepRequests))
		sz.Step = r.StepRequests
		sz.From = "its recorded reservation, size from " + r.Source
		return sz
	}
	// The scheduler's own sizing, step headroom and defaults included, as
	// its last attempt found it.
	if scheduled != nil {
		if m := postFilterMessage.FindStringSubmatch(scheduled.Message); m != nil {
			if rl, err := parseResourceList(m[1]); err == nil {
				sz.Workflow, sz.From = add(rl, onePod()), fmt.Sprintf("the scheduler's message: size from %s, step headroom included", m[2])
				return sz
			}
		}
	}
	if v, ok := pod.Annotations[contract.WorkflowRequestsAnnotation]; ok {
		rl, err := parseResourceList(v)
		if err == nil {
			sz.Workflow, sz.From = add(rl, onePod()), "annotation "+contract.WorkflowRequestsAnnotation
			if v, ok := pod.Annotations[contract.StepRequestsAnnotation]; ok && !strings.EqualFold(strings.TrimSpace(v), "template") {
				if step, err := parseResourceList(v); err == nil {
					sz.Step = add(step, onePod())
				} else {
					sz.Problems = append(sz.Problems, fmt.Sprintf("annotation %s: %v (tandem then uses defaultStepRequests)", contract.StepRequestsAnnotation, err))
				}
			} else {
				sz.From += "; plus defaultStepRequests or the hook template's step size, if tandem is configured with one"
			}
			return sz
		}
		sz.Problems = append(sz.Problems, fmt.Sprintf("annotation %s: %v (tandem then tries the hook template, then defaultWorkflowRequests)", contract.WorkflowRequestsAnnotation, err))
	}
	if path := hookTemplatePath(pod); path != "" {
		sz.From = fmt.Sprintf("its hook template (%s) decides; kubectl-tandem does not read hook templates", path)
	} else {
		sz.From = "defaultWorkflowRequests of tandem's configuration decides, if set; without it the runner is placed without a reservation"
	}
	return sz
}

// hookTemplatePath is the runner's ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE.
func hookTemplatePath(pod *v1.Pod) string {
	for _, c := range pod.Spec.Containers {
		for _, env := range c.Env {
			if env.Name == contract.HookTemplateEnv && env.Value != "" {
				return env.Value
			}
		}
	}
	return ""
}
