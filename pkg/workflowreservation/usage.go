package workflowreservation

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// reservedOn sums what the reservations on the node hold against the pod
// being scheduled: not its own runner's (a workflow or step pod may use
// it), not those the cycle's dry run removed, plus the workflow room of
// runners nominated to the node. It reads the store, not a per-cycle copy:
// during a cycle only informer handlers and the reconciler change it, and
// they free room, but for a reservation rebuilt from a runner shown bound
// with its record (another replica's binding, seen before this one's
// store has it), which the next cycle counts.
//
// Filter and Score call it for every node of every cycle. What all of a
// node's reservations hold against a pod without a reservation of its own
// is cached with the node's reservations until they or the node's pods
// (the NodeInfo generation) change, beside the node's entry in the index
// of the snapshot's nodes (nodeIndex): in a steady cluster the call is one
// probe of the index's table and a few atomic loads from the same cache
// line, whatever the number of reservations, with no lock taken. Pods with
// a reservation of their own, dry runs and a node the index does not know
// compute it afresh, under the store's read lock.
func (pl *WorkflowReservation) reservedOn(s *cycleState, nodeInfo fwk.NodeInfo) reservations.Held {
	own := s.kind == kindWorkflow || s.kind == kindStep
	cacheable := !own && s.adjust.empty()
	if cacheable {
		if h, ok := pl.index.cached(nodeInfo); ok {
			return h
		}
	}
	node := nodeInfo.Node().Name
	var out reservations.Held
	pl.store.WithNode(node, func(n *reservations.NodeReservations) {
		if n == nil || len(n.Facts()) == 0 {
			return
		}
		generation := nodeInfo.GetGeneration()
		if cacheable {
			if h, ok := n.Cached(generation); ok {
				out = h
				return
			}
		}
		fs := n.Facts()
		var buf [16]contract.RunnerPods
		on := buf[:0]
		if len(fs) > len(buf) {
			on = make([]contract.RunnerPods, 0, len(fs))
		}
		on = pl.runnerPodsOn(n, fs, nodeInfo, on[:len(fs)])
		for i := range fs {
			f := &fs[i]
			if f.Done || s.adjust.isRemoved(f.RunnerUID) {
				continue
			}
			if own && f.RunnerUID == s.own.RunnerUID {
				if s.kind == kindWorkflow {
					// Its placeholder yields to it: that room is its own too.
					out.Amount = out.Amount.Sub(on[i].Placeholder)
				}
				continue
			}
			a, ports := f.Holds(on[i])
			out.Amount = out.Amount.Add(a)
			out.Ports = append(out.Ports, ports...)
		}
		if cacheable {
			n.Cache(generation, out)
		}
	})
	out.Amount = s.adjust.addedOn(node, out.Amount)
	return out
}

// runnerPodsOn finds, in one pass over the node's pods, what each of the
// node's reservations' runners has there: its workflow pod (the first pod
// labelled with the runner's name, of its incarnation, or the one that
// claimed) and its step pods (other such pods; for hooks v0.7.0, the pods
// of a Job labelled with the runner's name).
//
// fs are the reservations' facts (NodeReservations.Facts); on has fs's
// length and is filled in and returned. n, if not nil, keeps what the pass
// read from each pod (podScan) for the node's next one.
func (pl *WorkflowReservation) runnerPodsOn(n *reservations.NodeReservations, fs []reservations.Facts, nodeInfo fwk.NodeInfo, on []contract.RunnerPods) []contract.RunnerPods {
	clear(on)
	var prev *podScan
	if n != nil {
		prev, _ = n.Scan().(*podScan)
		if prev != nil && prev.by != pl {
			prev = nil // another profile's: its runnerPodLabel may differ
		}
	}
	pis := nodeInfo.GetPods()
	next := &podScan{by: pl, pods: make([]*v1.Pod, len(pis)), role: make([]int32, len(pis))}
	for k, pi := range pis {
		p := pi.GetPod()
		next.pods[k], next.role[k] = p, -1
		var role podRole
		switch {
		case prev != nil && k < len(prev.pods) && prev.pods[k] == p:
			if prev.role[k] < 0 {
				continue
			}
			role = prev.roles[prev.role[k]]
		default:
			var ok bool
			if role, ok = pl.roleOf(pi, p); !ok {
				continue
			}
		}
		next.role[k] = int32(len(next.roles))
		next.roles = append(next.roles, role)
		if role.placeholder {
			i := reservations.FindFacts(fs, role.key, role.namespace, role.runner)
			if i >= 0 && role.controller == fs[i].RunnerUID {
				on[i].Placeholder = on[i].Placeholder.Add(role.amount)
				on[i].HasPlaceholder = true
			}
			continue
		}
		name, key, viaJob := role.runner, role.key, false
		if role.job != "" {
			name, viaJob = pl.pods.JobRunner(role.namespace, role.job, role.jobUID), true
			key = reservations.RunnerKey(role.namespace, name)
		}
		if name == "" {
			continue
		}
		i := reservations.FindFacts(fs, key, role.namespace, name)
		if i < 0 || !fs[i].Owns(p) {
			continue
		}
		f := &fs[i]
		if !viaJob && !on[i].Workflow && (f.ClaimedBy == "" || f.ClaimedBy == p.UID) {
			on[i].Workflow, on[i].WorkflowRequest = true, role.amount
		} else {
			on[i].Steps = on[i].Steps.Add(role.amount)
		}
	}
	if n != nil {
		n.SetScan(next)
	}
	return on
}

// podScan is what runnerPodsOn read from a node's pods, in the order of
// the node's pods. A node is scanned again whenever its pods change (a
// pod added, removed or updated); a pod that is still the same object at
// the same place is not read again (its labels, annotations, owner and
// requests), only matched against the node's reservations. Informers'
// objects are not changed in place: an updated pod is a new object. A scan
// costs 12 bytes a pod and a podRole for each that can be a reservation's,
// and keeps the pods it saw, deleted ones too, referenced until the node's
// next scan or until the node holds no reservation.
type podScan struct {
	// by is the plugin (profile) that read them.
	by   *WorkflowReservation
	pods []*v1.Pod
	// role is, per pod, its index in roles, or -1: it is no reservation's.
	role  []int32
	roles []podRole
}

// podRole is what a pod can be to a reservation on its node.
type podRole struct {
	namespace string
	// placeholder: a placeholder of runner, controlled by the runner pod
	// with UID controller.
	placeholder bool
	controller  types.UID
	// runner is the runner-pod label's value, and key its RunnerKey; job
	// and jobUID the Job that controls an unlabelled pod, whose label is
	// read on every scan (a Job's labels may change, its pods do not).
	runner string
	key    uint64
	job    string
	jobUID types.UID
	amount contract.Amount
}

// roleOf reads what pod can be to a reservation; false if nothing.
func (pl *WorkflowReservation) roleOf(pi fwk.PodInfo, p *v1.Pod) (podRole, bool) {
	role := podRole{namespace: p.Namespace}
	switch {
	case contract.IsPlaceholder(p):
		role.placeholder = true
		role.runner = p.Annotations[contract.PlaceholderOfAnnotation]
		role.controller = metav1.GetControllerOf(p).UID
	default:
		if name, ok := p.Labels[pl.runnerPodLabel]; ok {
			role.runner = name
		} else if owner := metav1.GetControllerOf(p); owner != nil && owner.Kind == "Job" && pl.jobsWatched {
			role.job, role.jobUID = owner.Name, owner.UID
		} else {
			return podRole{}, false
		}
	}
	role.key = reservations.RunnerKey(role.namespace, role.runner)
	role.amount = amountOfPodInfo(pi)
	return role, true
}

// podHostPorts returns the host ports pod asks for.
func podHostPorts(pod *v1.Pod) []contract.HostPort {
	var out []contract.HostPort
	add := func(cs []v1.Container) {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort > 0 {
					proto := p.Protocol
					if proto == "" {
						proto = v1.ProtocolTCP
					}
					out = append(out, contract.HostPort{Protocol: proto, Port: p.HostPort})
				}
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	return out
}

// portConflict reports whether a port of want is used by the node's pods
// or held in held.
func portConflict(want []contract.HostPort, nodeInfo fwk.NodeInfo, held []contract.HostPort) bool {
	if len(want) == 0 {
		return false
	}
	used := nodeInfo.GetUsedPorts()
	for _, p := range want {
		if used.CheckConflict("", string(p.Protocol), p.Port) || slices.Contains(held, p) {
			return true
		}
	}
	return false
}
