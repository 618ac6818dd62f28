package reservations

import (
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

// Reservation is capacity held on a node for a runner's future workflow pod.
// It belongs to one incarnation of the runner: ARC recreates a failed runner
// pod under the same name, so the name alone does not say whose it is.
type Reservation struct {
	// runner is the runner pod's namespace/name; workflow pods name their
	// runner by name in the same namespace.
	Runner    types.NamespacedName
	RunnerUID types.UID
	// runnerCreated is the runner pod's creation time: a workflow pod
	// created before it belongs to an earlier runner of the same name.
	RunnerCreated time.Time
	// stale are the workflow pods labelled with the runner's name that
	// existed when the reservation was taken: they belong to an earlier
	// runner of the same name, whatever their timestamps (which have whole
	// seconds only) say.
	Stale []types.UID
	Node  string
	// size is the room held before the workflow pod arrives: its request,
	// step headroom included, one pod for each.
	Size contract.Amount
	// step is the headroom for container-step pods within size (one pod
	// included): after the workflow pod's claim, only it stays held, for
	// the step pods to use, until the runner ends.
	Step contract.Amount
	// ports are the host ports the workflow pod will use, held until it
	// arrives.
	Ports  []contract.HostPort
	Source contract.Source
	// hookMode is how the runner's hook places the workflow pod, as tandem
	// read it from the runner pod (for events).
	HookMode string
	// claimedBy is the workflow pod that took the reservation, once it was
	// reserved by the scheduler or seen bound to the node.
	claimedBy types.UID
	// claimSeen is set once the claiming workflow pod was seen bound: an
	// Unreserve of its scheduling cycle no longer takes the claim back.
	claimSeen bool
	// done is set when the claiming workflow pod has gone: the reservation
	// no longer holds anything, but is kept until its runner goes.
	done bool
	// bound is set once the runner pod is seen bound to node: only the
	// runner's end releases the reservation from then on, not an Unreserve
	// of a bind that reported a failure but went through.
	bound bool
	// reservedAt is when this scheduler took the reservation; zero for one
	// rebuilt from its runner pod.
	ReservedAt time.Time
	// jobStarted is when the runner was seen to start a job (its
	// EphemeralRunner's status): the workflow pod has noWorkflowPodGrace
	// from then on. staleJob is the job the EphemeralRunner showed when the
	// reservation was taken, an earlier runner's.
	jobStarted time.Time
	StaleJob   string
	// noWorkflowPod is set when the job started and no workflow pod came
	// within the grace: only the step headroom stays held.
	noWorkflowPod bool
}

// Owns reports whether pod, which carries the runner's name in its
// runner-pod label, is this incarnation's workflow pod.
func (r *Reservation) Owns(pod *v1.Pod) bool {
	f := Facts{RunnerCreated: r.RunnerCreated, Stale: r.Stale}
	return f.Owns(pod)
}

// Store is the plugin's record of reservations, fed by Reserve/Unreserve and
// by informer events, and rebuilt from runner pods after a restart. It keeps
// a tally by phase for the metrics, so that reading them costs nothing.
type Store struct {
	mu    sync.RWMutex
	byPod map[types.NamespacedName]*Reservation
	// byNode holds each node's reservations: a node with reservations, or
	// one that an index of the scheduler's nodes asked for (Nodes), has an
	// entry.
	byNode map[string]*NodeReservations
	tally  tally
}

// Phases of a reservation, as the metrics name them.
const (
	PhaseHeld     = "held"
	PhaseClaimed  = "claimed"
	PhaseFinished = "finished"
)

// Phase is the reservation's phase as the metrics name it.
func (r *Reservation) Phase() string {
	switch {
	case r.done:
		return PhaseFinished
	case r.claimedBy != "":
		return PhaseClaimed
	default:
		return PhaseHeld
	}
}

// tally counts reservations by phase and sums the room held unclaimed.
type tally struct {
	byPhase map[string]int
	held    contract.Amount
}

func (t *tally) count(r *Reservation, sign int64) {
	if t.byPhase == nil {
		t.byPhase = map[string]int{PhaseHeld: 0, PhaseClaimed: 0, PhaseFinished: 0}
	}
	t.byPhase[r.Phase()] += int(sign)
	if r.Phase() == PhaseHeld {
		t.held = t.held.Add(r.Size.Scale(sign))
	}
}

// byRunner orders reservations by runner name, then namespace.
func byRunner(a, b *Reservation) int {
	if c := strings.Compare(a.Runner.Name, b.Runner.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Runner.Namespace, b.Runner.Namespace)
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		byPod:  map[types.NamespacedName]*Reservation{},
		byNode: map[string]*NodeReservations{},
	}
}

// put adds or replaces the reservation of r.runner.
func (s *Store) put(r *Reservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(r.Runner)
	s.byPod[r.Runner] = r
	n := s.nodeLocked(r.Node)
	i, _ := slices.BinarySearchFunc(n.list, r, byRunner)
	n.insert(i, r)
	s.tally.count(r, 1)
}

// removeIf deletes the reservation of runner if it belongs to uid (any uid when
// empty) and cond holds for it under the lock, and returns it.
func (s *Store) removeIf(runner types.NamespacedName, uid types.UID, cond func(*Reservation) bool) *Reservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byPod[runner]
	if r == nil || (uid != "" && r.RunnerUID != uid) || !cond(r) {
		return nil
	}
	s.deleteLocked(runner)
	return r
}

func (s *Store) deleteLocked(runner types.NamespacedName) {
	r := s.byPod[runner]
	if r == nil {
		return
	}
	s.tally.count(r, -1)
	delete(s.byPod, runner)
	n := s.byNode[r.Node]
	if n == nil {
		return
	}
	n.remove(r)
	if len(n.list) == 0 && !n.indexed {
		s.dropLocked(n)
	}
}

// Get returns a copy of runner's reservation.
func (s *Store) Get(runner types.NamespacedName) (Reservation, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := s.byPod[runner]
	if r == nil {
		return Reservation{}, false
	}
	return *r, true
}

// Empty reports whether no reservation is held anywhere.
func (s *Store) Empty() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byPod) == 0
}

// SumOn adds up the reservations on node that are not used up and for
// which count is true. It runs on every Filter and Score call: it copies
// nothing and allocates nothing for cpu, memory and pods.
func (s *Store) SumOn(node string, count func(*Reservation) bool) contract.Amount {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var sum contract.Amount
	n := s.byNode[node]
	if n == nil {
		return contract.Amount{}
	}
	for _, r := range n.list {
		if !r.done && count(r) {
			sum = sum.Add(r.Size)
		}
	}
	return sum
}

// Counts returns the tally: reservations by phase and the room held unclaimed.
func (s *Store) Counts() (map[string]int, contract.Amount) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byPhase := map[string]int{PhaseHeld: 0, PhaseClaimed: 0, PhaseFinished: 0}
	for k, v := range s.tally.byPhase {
		byPhase[k] = v
	}
	return byPhase, s.tally.held
}

// List returns copies of all reservations.
func (s *Store) List() []Reservation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Reservation, 0, len(s.byPod))
	for _, r := range s.byPod {
		out = append(out, *r)
	}
	return out
}
