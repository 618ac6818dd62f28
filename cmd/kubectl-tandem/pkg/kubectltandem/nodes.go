package kubectltandem

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

// NodeUsage is a node's room once reservations are counted.
type NodeUsage struct {
	Name        string          `json:"name"`
	Allocatable v1.ResourceList `json:"allocatable"`
	// Requested is what the node's pods request: bound, not finished.
	Requested v1.ResourceList `json:"requested"`
	// Reserved is what reservations on the node still hold.
	Reserved v1.ResourceList `json:"reserved"`
	// Free is Allocatable - Requested - Reserved. It is negative where
	// pods tandem did not place (another scheduler's, nodeName) took
	// reserved room.
	Free v1.ResourceList `json:"free"`
	// Reservations counts the node's reservations by phase.
	Reservations map[Phase]int `json:"reservations"`
	// Holders are the node's reservations that hold something now.
	Holders []Holder `json:"holders,omitempty"`
	// Runners are the runners with a reservation on the node, any phase.
	Runners []string `json:"runners,omitempty"`
}

// Holder is a runner holding room on a node.
type Holder struct {
	Runner string          `json:"runner"`
	Phase  Phase           `json:"phase"`
	Holds  v1.ResourceList `json:"holds"`
}

// nodeUsage computes every node's usage, by name. Invalid reservations
// hold nothing and are not counted.
func nodeUsage(s *Snapshot, rs []Reservation) []NodeUsage {
	holders := map[types.UID]bool{}
	byNode := map[string][]Reservation{}
	for _, r := range rs {
		if r.Phase == PhaseInvalid {
			continue
		}
		byNode[r.Node] = append(byNode[r.Node], r)
		for _, uid := range r.Holders {
			holders[uid] = true
		}
	}
	requested := map[string]v1.ResourceList{}
	for _, p := range s.Pods {
		if p.Spec.NodeName == "" || contract.IsTerminal(p) || holders[p.UID] || contract.IsPlaceholder(p) {
			// A placeholder's room is its reservation's: counted as reserved.
			continue
		}
		requested[p.Spec.NodeName] = add(requested[p.Spec.NodeName], podRequests(p))
	}
	out := make([]NodeUsage, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		u := NodeUsage{
			Name:         n.Name,
			Allocatable:  nonZero(n.Status.Allocatable.DeepCopy()),
			Requested:    add(requested[n.Name]),
			Reservations: map[Phase]int{PhaseHeld: 0, PhaseClaimed: 0, PhaseFinished: 0},
		}
		if u.Allocatable == nil {
			u.Allocatable = v1.ResourceList{}
		}
		var reserved []v1.ResourceList
		for _, r := range byNode[n.Name] {
			u.Reservations[r.Phase]++
			u.Runners = append(u.Runners, r.key())
			reserved = append(reserved, r.Holds)
			if !isZero(r.Holds) {
				u.Holders = append(u.Holders, Holder{Runner: r.key(), Phase: r.Phase, Holds: r.Holds})
			}
		}
		u.Reserved = add(reserved...)
		u.Free = sub(sub(u.Allocatable, u.Requested), u.Reserved)
		slices.Sort(u.Runners)
		slices.SortFunc(u.Holders, func(a, b Holder) int { return strings.Compare(a.Runner, b.Runner) })
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b NodeUsage) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// nodesTable renders usages as kubectl get does: cpu, memory and pods
// allocatable, requested, reserved and free; wide adds other resources,
// the reservations by phase and the runners.
func nodesTable(us []NodeUsage) *metav1.Table {
	t := &metav1.Table{}
	for _, res := range []string{"CPU", "MEM", "PODS"} {
		for _, what := range []string{"ALLOC", "REQ", "RSVD", "FREE"} {
			t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: res + "-" + what, Type: "string"})
		}
	}
	t.ColumnDefinitions = append([]metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name"}}, t.ColumnDefinitions...)
	t.ColumnDefinitions = append(t.ColumnDefinitions,
		metav1.TableColumnDefinition{Name: "Other-Free", Type: "string", Priority: 1, Description: "free room of the other resources pods or reservations on the node ask for"},
		metav1.TableColumnDefinition{Name: "Held", Type: "integer", Priority: 1},
		metav1.TableColumnDefinition{Name: "Claimed", Type: "integer", Priority: 1},
		metav1.TableColumnDefinition{Name: "Finished", Type: "integer", Priority: 1},
		metav1.TableColumnDefinition{Name: "Runners", Type: "string", Priority: 1},
	)
	for _, u := range us {
		cells := []any{u.Name}
		for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods} {
			cells = append(cells, quantity(u.Allocatable, n), quantity(u.Requested, n), quantity(u.Reserved, n), quantity(u.Free, n))
		}
		runners := "<none>"
		if len(u.Runners) > 0 {
			runners = strings.Join(u.Runners, ",")
		}
		cells = append(cells, otherFree(u), u.Reservations[PhaseHeld], u.Reservations[PhaseClaimed], u.Reservations[PhaseFinished], runners)
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return t
}

// otherFree is the free room of the resources other than cpu, memory and
// pods that pods or reservations on the node ask for.
func otherFree(u NodeUsage) string {
	other := v1.ResourceList{}
	for _, l := range []v1.ResourceList{u.Requested, u.Reserved} {
		for n := range l {
			if rank(n) == 3 {
				other[n] = u.Free[n]
			}
		}
	}
	if len(other) == 0 {
		return "<none>"
	}
	parts := make([]string, 0, len(other))
	for _, n := range names(other) {
		q := other[n]
		parts = append(parts, string(n)+"="+q.String())
	}
	return strings.Join(parts, ",")
}
