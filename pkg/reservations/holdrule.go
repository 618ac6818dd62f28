package reservations

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

// The hold rule is the contract's (contract.Holding); Facts carries what it
// reads of a reservation, and Holds applies it.

// Held is what the reservations on a node hold against a pod.
type Held struct {
	Amount contract.Amount
	Ports  []contract.HostPort
}

// Facts are what the hold rule and the matching of a node's pods to its
// reservations read of one reservation. Each node's entry keeps them inline,
// side by side in the order of its reservations (NodeReservations.Facts),
// so that computing what a node holds reads them in order rather than
// following one pointer per reservation; only a change to these fields
// changes what the node holds.
type Facts struct {
	// Key is RunnerKey of the runner's namespace and name.
	Key           uint64
	Runner        types.NamespacedName
	RunnerUID     types.UID
	RunnerCreated time.Time
	Stale         []types.UID
	ClaimedBy     types.UID
	Size, Step    contract.Amount
	Ports         []contract.HostPort
	Done          bool
	NoWorkflowPod bool
}

// Facts returns what the hold rule reads of r.
func (r *Reservation) Facts() Facts {
	return Facts{
		Key: RunnerKey(r.Runner.Namespace, r.Runner.Name), Runner: r.Runner, RunnerUID: r.RunnerUID, RunnerCreated: r.RunnerCreated,
		Stale: r.Stale, ClaimedBy: r.claimedBy, Size: r.Size, Step: r.Step, Ports: r.Ports, Done: r.done, NoWorkflowPod: r.noWorkflowPod,
	}
}

// equal reports whether f and g hold alike (Key and Runner follow RunnerUID's
// reservation; the slices are never changed in place).
func (f *Facts) equal(g *Facts) bool {
	return f.RunnerUID == g.RunnerUID && f.Runner == g.Runner && f.RunnerCreated.Equal(g.RunnerCreated) &&
		slices.Equal(f.Stale, g.Stale) && f.ClaimedBy == g.ClaimedBy && f.Size.Equal(g.Size) && f.Step.Equal(g.Step) &&
		slices.Equal(f.Ports, g.Ports) && f.Done == g.Done && f.NoWorkflowPod == g.NoWorkflowPod
}

// RunnerKey is a 64-bit hash of a runner's namespace and name (FNV-1a), so
// that a pod naming a runner finds its reservation among a node's by
// comparing integers; equal keys are then confirmed by name.
func RunnerKey(namespace, name string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := range len(namespace) {
		h = (h ^ uint64(namespace[i])) * prime
	}
	h = (h ^ '/') * prime
	for i := range len(name) {
		h = (h ^ uint64(name[i])) * prime
	}
	return h
}

// FindFacts returns the index in fs of the reservation of the runner
// namespace/name, whose RunnerKey is key, or -1.
func FindFacts(fs []Facts, key uint64, namespace, name string) int {
	for i := range fs {
		if fs[i].Key == key && fs[i].Runner.Name == name && fs[i].Runner.Namespace == namespace {
			return i
		}
	}
	return -1
}

// Owns reports whether pod, which carries the runner's name in its
// runner-pod label, is of this runner incarnation (contract.OfIncarnation).
func (f *Facts) Owns(pod *v1.Pod) bool {
	return contract.OfIncarnation(pod, f.RunnerCreated, f.Stale)
}

// Holds returns what r still holds, given its runner's pods on the node.
func (r *Reservation) Holds(on contract.RunnerPods) (contract.Amount, []contract.HostPort) {
	f := r.Facts()
	return f.Holds(on)
}

// Holds returns what the reservation still holds, given its runner's pods on
// the node.
func (f *Facts) Holds(on contract.RunnerPods) (contract.Amount, []contract.HostPort) {
	h := contract.Holding{Size: f.Size, Step: f.Step, Ended: f.Done, Claimed: f.ClaimedBy != "", NoWorkflowPod: f.NoWorkflowPod}
	held, ports := h.Holds(on)
	if !ports {
		return held, nil
	}
	return held, f.Ports
}
