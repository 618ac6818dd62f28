package kubectltandem

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// candidateNodes returns the nodes pod may go to as far as a cheap check
// tells: its nodeName, nodeSelector and required node affinity, the taints
// it does not tolerate (NoSchedule, NoExecute) and cordoned nodes. Pod
// affinity, topology spread, volumes and host ports are the scheduler's to
// check.
func candidateNodes(logger klog.Logger, pod *v1.Pod, nodes []*v1.Node) ([]*v1.Node, []Excluded) {
	var in []*v1.Node
	var out []Excluded
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	untolerated := func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
	for _, n := range nodes {
		var why string
		if pod.Spec.NodeName != "" && n.Name != pod.Spec.NodeName {
			why = "the pod's nodeName is " + pod.Spec.NodeName
		} else if ok, err := affinity.Match(n); err != nil {
			why = "its node affinity cannot be read: " + err.Error()
		} else if !ok {
			why = "does not match its nodeSelector or required node affinity"
		} else if t, found := untoleratedTaint(logger, n.Spec.Taints, pod.Spec.Tolerations, untolerated); found {
			why = fmt.Sprintf("taint %s not tolerated", t.ToString())
		} else if n.Spec.Unschedulable && !tolerates(logger, pod, v1.TaintNodeUnschedulable) {
			why = "cordoned"
		}
		if why != "" {
			out = append(out, Excluded{Node: n.Name, Why: why})
			continue
		}
		in = append(in, n)
	}
	return in, out
}

func tolerates(logger klog.Logger, pod *v1.Pod, key string) bool {
	return toleratesTaint(logger, pod.Spec.Tolerations, &v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule})
}

// pendingVerdict says in one line why the pending pod is not placed.
func (e *Explanation) pendingVerdict(s *Snapshot, pod *v1.Pod) string {
	if e.Scheduled != nil && strings.Contains(e.Scheduled.Message, "the size of its workflow pod is unknown") {
		return "tandem does not know how big its workflow pod will be (see the InvalidWorkflowSize events): fix the sizing source, or configure defaultWorkflowRequests"
	}
	if !s.rules.isTandem(pod) {
		return fmt.Sprintf("its scheduler is %q, not tandem (--scheduler-name): tandem does not place it", pod.Spec.SchedulerName)
	}
	avail := make([]v1.ResourceList, len(e.Nodes))
	for i, u := range e.Nodes {
		avail[i] = u.Free
	}
	prefix := ""
	switch e.Kind {
	case KindRunner:
		if e.Size.Workflow == nil {
			prefix = "its workflow pod's size is unknown here (" + e.Size.From + "); for the runner alone: "
		}
	case KindWorkflow:
		r := e.Reservation
		switch {
		case r == nil:
			prefix = fmt.Sprintf("its runner %s/%s holds no reservation; as an ordinary pod: ", pod.Namespace, e.Runner)
		case r.Phase == PhaseInvalid:
			prefix = fmt.Sprintf("its runner %s's reservation is invalid (%s); as an ordinary pod: ", r.key(), r.Invalid)
		case e.earlier(s, pod):
			prefix = fmt.Sprintf("it belongs to an earlier runner named %s and claims nothing; as an ordinary pod: ", e.Runner)
		case r.Phase != PhaseHeld:
			prefix = fmt.Sprintf("its runner %s's reservation is %s already (workflow pod %s); as an ordinary pod: ", r.key(), r.Phase, orNone(r.WorkflowPod))
		case r.WorkflowPod != pod.Name:
			prefix = fmt.Sprintf("its runner %s's workflow pod is %s, not this one; as an ordinary pod: ", r.key(), r.WorkflowPod)
		default:
			i := indexOf(e.Nodes, r.Node)
			if i < 0 {
				return fmt.Sprintf("its runner %s holds %s on node %s, but the pod may not go there (%s)", r.key(), amount(r.Holds), r.Node, exclusion(e.Excluded, r.Node))
			}
			avail[i] = add(avail[i], r.Holds)
			if missing := short(e.Need, avail[i]); len(missing) > 0 {
				return fmt.Sprintf("its runner %s holds %s on node %s, which has %s free besides; the workflow pod needs %s",
					r.key(), only(r.Holds, missing), r.Node, only(e.Nodes[i].Free, missing), only(e.Need, missing))
			}
			return fmt.Sprintf("it fits on node %s with its runner %s's reservation (%s held, %s free besides); if it stays pending, something kubectl-tandem does not check stops it: see the PodScheduled message",
				r.Node, r.key(), amount(r.Holds), amount(e.Nodes[i].Free))
		}
	}
	need := e.Need
	if e.Kind == KindRunner && e.Size.Workflow == nil {
		need = e.Requests
	}
	return prefix + fitVerdict(need, e.Nodes, avail, e.Excluded)
}

// fitVerdict says whether need fits in the room avail[i] of nodes[i].
func fitVerdict(need v1.ResourceList, nodes []NodeUsage, avail []v1.ResourceList, excluded []Excluded) string {
	if len(nodes) == 0 {
		if len(excluded) == 0 {
			return "there are no nodes"
		}
		return "no node matches its nodeSelector, required node affinity, tolerations (or nodeName)"
	}
	var fit []string
	for i, u := range nodes {
		if len(short(need, avail[i])) == 0 {
			fit = append(fit, u.Name)
		}
	}
	if len(fit) > 0 {
		return fmt.Sprintf("%s %s room for %s after reservations; if it stays pending, something kubectl-tandem does not check stops it (pod affinity, topology spread, host ports, volumes): see the PodScheduled message",
			list3(fit), hasHave(len(fit)), amount(need))
	}
	// Resources no node has enough of, each with the node that has most.
	type shortfall struct {
		name       v1.ResourceName
		want, most string
		node       string
	}
	var shorts []shortfall
	for _, n := range names(need) {
		best := 0
		for i := range nodes {
			if q := avail[i][n]; q.Cmp(avail[best][n]) > 0 {
				best = i
			}
		}
		if q, b := need[n], avail[best][n]; q.Sign() > 0 && q.Cmp(b) > 0 {
			shorts = append(shorts, shortfall{name: n, want: q.String(), most: b.String(), node: nodes[best].Name})
		}
	}
	switch len(shorts) {
	case 0:
	case 1:
		x := shorts[0]
		return fmt.Sprintf("no node has %s=%s free after reservations; the largest is %s with %s", x.name, x.want, x.node, x.most)
	default:
		var wants, largest []string
		for _, x := range shorts {
			wants = append(wants, fmt.Sprintf("%s=%s", x.name, x.want))
			largest = append(largest, fmt.Sprintf("%s with %s=%s", x.node, x.name, x.most))
		}
		return fmt.Sprintf("no node has %s free after reservations; the largest are %s", strings.Join(wants, " or "), strings.Join(largest, " and "))
	}
	// Enough of each somewhere, never all at once.
	var lacks []string
	for i, u := range nodes {
		missing := short(need, avail[i])
		lacks = append(lacks, fmt.Sprintf("%s lacks %s", u.Name, only(avail[i], missing)))
	}
	if len(lacks) > 3 {
		lacks = append(lacks[:3], "...")
	}
	return fmt.Sprintf("no node has %s free at once after reservations: %s", amount(need), strings.Join(lacks, ", "))
}

// boundVerdict says what a bound pod holds.
func (e *Explanation) boundVerdict(s *Snapshot, pod *v1.Pod) string {
	r := e.Reservation
	switch e.Kind {
	case KindRunner:
		switch {
		case r == nil && !s.rules.isTandem(pod):
			return fmt.Sprintf("bound to node %s by %q, not tandem: nothing is reserved for its workflow pod", pod.Spec.NodeName, pod.Spec.SchedulerName)
		case r == nil:
			return fmt.Sprintf("bound to node %s without a recorded reservation: %s", pod.Spec.NodeName, holdsNothing("tandem reserved nothing when it bound it (see its events: WorkflowSizeUnknown, WorkflowReservationNotRecorded)"))
		case r.Phase == PhaseInvalid && r.Resized:
			return fmt.Sprintf("bound to node %s; its recorded reservation holds nothing (%s): %s", pod.Spec.NodeName, r.Invalid, holdsNothing(""))
		case r.Phase == PhaseInvalid:
			return fmt.Sprintf("bound to node %s; its recorded reservation holds nothing: %s", pod.Spec.NodeName, r.Invalid)
		case r.Phase == PhaseHeld:
			return fmt.Sprintf("bound to node %s; its reservation holds %s there until its workflow pod comes", r.Node, amount(r.Holds))
		case r.Phase == PhaseClaimed:
			return fmt.Sprintf("bound to node %s; its workflow pod %s claimed the reservation, which still holds %s of step headroom", r.Node, r.WorkflowPod, amount(r.Holds))
		default:
			return fmt.Sprintf("bound to node %s; its workflow pod %s is gone and the reservation holds nothing", r.Node, r.WorkflowPod)
		}
	case KindWorkflow, KindStep:
		switch {
		case r == nil:
			return fmt.Sprintf("on node %s as an ordinary pod: its runner %s/%s holds no reservation", pod.Spec.NodeName, pod.Namespace, e.Runner)
		case r.Phase == PhaseInvalid:
			return fmt.Sprintf("on node %s as an ordinary pod: its runner's record is invalid (%s)", pod.Spec.NodeName, r.Invalid)
		case e.earlier(s, pod):
			return fmt.Sprintf("on node %s as an ordinary pod: it belongs to an earlier runner named %s", pod.Spec.NodeName, e.Runner)
		case e.Kind == KindStep && r.Node == pod.Spec.NodeName:
			return fmt.Sprintf("on node %s, in its runner %s's step headroom (which holds %s more)", pod.Spec.NodeName, r.key(), amount(r.Holds))
		case r.WorkflowPod != pod.Name:
			return fmt.Sprintf("on node %s as an ordinary pod: it is not its runner %s's workflow pod (%s)", pod.Spec.NodeName, r.key(), orNone(r.WorkflowPod))
		default:
			return fmt.Sprintf("on node %s: claimed its runner %s's reservation, which still holds %s of step headroom", r.Node, r.key(), amount(r.Holds))
		}
	}
	return fmt.Sprintf("bound to node %s", pod.Spec.NodeName)
}

// holdsNothing says what tandem holds for a bound runner of a tandem
// profile without a valid record: nothing, as the reconciler's Warning
// says (before says what happened before that, if anything). Its repair
// events on such a runner say what it released, not what it holds.
func holdsNothing(before string) string {
	if before != "" {
		return before + "; " + holdsNothingNote
	}
	return holdsNothingNote
}

// earlier reports whether pod, labelled with its runner's name, belongs to
// an earlier runner of that name.
func (e *Explanation) earlier(s *Snapshot, pod *v1.Pod) bool {
	runner := s.pod(pod.Namespace, e.Runner)
	if runner != nil && pod.CreationTimestamp.Before(&runner.CreationTimestamp) {
		return true
	}
	return e.Reservation != nil && slices.Contains(e.Reservation.StaleWorkflowPods, pod.UID)
}

// amount renders a size in verdicts: without the pod count, "nothing" for
// none.
func amount(l v1.ResourceList) string {
	if s := formatWithoutPods(l); s != "-" {
		return s
	}
	return "nothing"
}

func indexOf(us []NodeUsage, node string) int {
	for i, u := range us {
		if u.Name == node {
			return i
		}
	}
	return -1
}

func exclusion(ex []Excluded, node string) string {
	for _, x := range ex {
		if x.Node == node {
			return x.Why
		}
	}
	return "the node does not exist"
}

// only renders the resources ns of l, "0" for those l lacks.
func only(l v1.ResourceList, ns []v1.ResourceName) string {
	parts := make([]string, 0, len(ns))
	for _, n := range ns {
		parts = append(parts, fmt.Sprintf("%s=%s", n, quantity(l, n)))
	}
	return strings.Join(parts, ",")
}

func list3(names []string) string {
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}
