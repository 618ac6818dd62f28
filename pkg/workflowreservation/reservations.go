package workflowreservation

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/pkg/contract"
)

// reservation is capacity held on a node for a runner's future workflow pod.
// It belongs to one incarnation of the runner: ARC recreates a failed runner
// pod under the same name, so the name alone does not say whose it is.
type reservation struct {
	// runner is the runner pod's namespace/name; workflow pods name their
	// runner by name in the same namespace.
	runner    types.NamespacedName
	runnerUID types.UID
	// runnerCreated is the runner pod's creation time: a workflow pod
	// created before it belongs to an earlier runner of the same name.
	runnerCreated time.Time
	// stale are the workflow pods labelled with the runner's name that
	// existed when the reservation was taken: they belong to an earlier
	// runner of the same name, whatever their timestamps (which have whole
	// seconds only) say.
	stale []types.UID
	node  string
	// size is the room held before the workflow pod arrives: its request,
	// step headroom included, one pod for each.
	size amount
	// step is the headroom for container-step pods within size (one pod
	// included): after the workflow pod's claim, only it stays held, for
	// the step pods to use, until the runner ends.
	step amount
	// ports are the host ports the workflow pod will use, held until it
	// arrives.
	ports  []contract.HostPort
	source contract.Source
	// hookMode is how the runner's hook places the workflow pod, as tandem
	// read it from the runner pod (for events).
	hookMode string
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
	reservedAt time.Time
	// jobStarted is when the runner was seen to start a job (its
	// EphemeralRunner's status): the workflow pod has noWorkflowPodGrace
	// from then on. staleJob is the job the EphemeralRunner showed when the
	// reservation was taken, an earlier runner's.
	jobStarted time.Time
	staleJob   string
	// noWorkflowPod is set when the job started and no workflow pod came
	// within the grace: only the step headroom stays held.
	noWorkflowPod bool
}

// owns reports whether pod, which carries the runner's name in its
// runner-pod label, is this incarnation's workflow pod.
func (r *reservation) owns(pod *v1.Pod) bool {
	return !pod.CreationTimestamp.Time.Before(r.runnerCreated) && !slices.Contains(r.stale, pod.UID)
}

// store is the plugin's record of reservations, fed by Reserve/Unreserve and
// by informer events, and rebuilt from runner pods after a restart. It keeps
// a tally by phase for the metrics, so that reading them costs nothing.
type store struct {
	mu    sync.RWMutex
	byPod map[types.NamespacedName]*reservation
	// byNode holds each node's reservations; a node without any has no
	// entry.
	byNode map[string]*nodeReservations
	tally  tally
}

// nodeReservations are one node's reservations, sorted by runner name (then
// namespace) so that a pod finds its runner's by binary search; a slice,
// because Filter and Score walk it for every node of every cycle.
type nodeReservations struct {
	list []*reservation
	// version counts the changes to list: what Filter computed for the
	// node stays right while it and the node's pods do not change.
	version uint64
	// held is what the list held against a pod without a reservation of
	// its own, for one version and one generation of the node's pods
	// (plugin.held). Filter and Score run for many nodes in parallel, under
	// the store's read lock: hence atomic.
	held atomic.Pointer[heldEntry]
}

type heldEntry struct {
	version    uint64
	generation int64
	held       heldRoom
}

// Phases of a reservation, as the metrics name them.
const (
	phaseHeld     = "held"
	phaseClaimed  = "claimed"
	phaseFinished = "finished"
)

func (r *reservation) phase() string {
	switch {
	case r.done:
		return phaseFinished
	case r.claimedBy != "":
		return phaseClaimed
	default:
		return phaseHeld
	}
}

// tally counts reservations by phase and sums the room held unclaimed.
type tally struct {
	byPhase map[string]int
	held    amount
}

func (t *tally) count(r *reservation, sign int64) {
	if t.byPhase == nil {
		t.byPhase = map[string]int{phaseHeld: 0, phaseClaimed: 0, phaseFinished: 0}
	}
	t.byPhase[r.phase()] += int(sign)
	if r.phase() == phaseHeld {
		t.held = t.held.add(r.size.scale(sign))
	}
}

// byRunner orders reservations by runner name, then namespace.
func byRunner(a, b *reservation) int {
	if c := strings.Compare(a.runner.Name, b.runner.Name); c != 0 {
		return c
	}
	return strings.Compare(a.runner.Namespace, b.runner.Namespace)
}

// find returns the index in rs, sorted by byRunner, of the reservation of
// the runner namespace/name, or -1.
func find(rs []*reservation, namespace, name string) int {
	i, found := slices.BinarySearchFunc(rs, types.NamespacedName{Namespace: namespace, Name: name}, func(r *reservation, k types.NamespacedName) int {
		if c := strings.Compare(r.runner.Name, k.Name); c != 0 {
			return c
		}
		return strings.Compare(r.runner.Namespace, k.Namespace)
	})
	if !found {
		return -1
	}
	return i
}

func newStore() *store {
	return &store{
		byPod:  map[types.NamespacedName]*reservation{},
		byNode: map[string]*nodeReservations{},
	}
}

// put adds or replaces the reservation of r.runner.
func (s *store) put(r *reservation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(r.runner)
	s.byPod[r.runner] = r
	n := s.byNode[r.node]
	if n == nil {
		n = &nodeReservations{}
		s.byNode[r.node] = n
	}
	i, _ := slices.BinarySearchFunc(n.list, r, byRunner)
	n.list = slices.Insert(n.list, i, r)
	n.version++
	s.tally.count(r, 1)
}

// remove deletes the reservation of runner if it belongs to uid (any uid when
// empty) and returns it.
func (s *store) remove(runner types.NamespacedName, uid types.UID) *reservation {
	return s.removeIf(runner, uid, func(*reservation) bool { return true })
}

// removeIf deletes the reservation of runner if it belongs to uid (any uid when
// empty) and cond holds for it under the lock, and returns it.
func (s *store) removeIf(runner types.NamespacedName, uid types.UID, cond func(*reservation) bool) *reservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byPod[runner]
	if r == nil || (uid != "" && r.runnerUID != uid) || !cond(r) {
		return nil
	}
	s.deleteLocked(runner)
	return r
}

func (s *store) deleteLocked(runner types.NamespacedName) {
	r := s.byPod[runner]
	if r == nil {
		return
	}
	s.tally.count(r, -1)
	delete(s.byPod, runner)
	n := s.byNode[r.node]
	if n == nil {
		return
	}
	if i := slices.Index(n.list, r); i >= 0 {
		n.list = slices.Delete(n.list, i, i+1)
	}
	n.version++
	if len(n.list) == 0 {
		delete(s.byNode, r.node)
	}
}

// removeNode deletes every reservation on node and returns them.
func (s *store) removeNode(node string) []*reservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.byNode[node]
	if n == nil {
		return nil
	}
	for _, r := range n.list {
		s.tally.count(r, -1)
		delete(s.byPod, r.runner)
	}
	delete(s.byNode, node)
	return n.list
}

// get returns a copy of runner's reservation.
func (s *store) get(runner types.NamespacedName) (reservation, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := s.byPod[runner]
	if r == nil {
		return reservation{}, false
	}
	return *r, true
}

// update applies fn to runner's reservation, if there is one, under the
// lock; fn reports whether it changed anything, and only then do the
// tally and the node's version (which invalidates what Filter cached for
// the node) change. fn must not change the reservation's node.
func (s *store) update(runner types.NamespacedName, fn func(r *reservation) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byPod[runner]
	if r == nil {
		return
	}
	before := *r
	if !fn(r) {
		return
	}
	s.tally.count(&before, -1)
	s.tally.count(r, 1)
	if n := s.byNode[r.node]; n != nil {
		n.version++
	}
}

// empty reports whether no reservation is held anywhere.
func (s *store) empty() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byPod) == 0
}

// sumOn adds up the reservations on node that are not used up and for
// which count is true. It runs on every Filter and Score call: it copies
// nothing and allocates nothing for cpu, memory and pods.
func (s *store) sumOn(node string, count func(*reservation) bool) amount {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var sum amount
	n := s.byNode[node]
	if n == nil {
		return amount{}
	}
	for _, r := range n.list {
		if !r.done && count(r) {
			sum = sum.add(r.size)
		}
	}
	return sum
}

// withNode calls fn with node's reservations (nil if it has none) under the
// read lock. fn must not change them, other than their held cache, nor
// call the store.
func (s *store) withNode(node string, fn func(n *nodeReservations)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fn(s.byNode[node])
}

// nodeVersion returns the version of node's reservations (0 if it has none),
// for tests.
func (s *store) nodeVersion(node string) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := s.byNode[node]; n != nil {
		return n.version
	}
	return 0
}

// counts returns the tally: reservations by phase and the room held unclaimed.
func (s *store) counts() (map[string]int, amount) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byPhase := map[string]int{phaseHeld: 0, phaseClaimed: 0, phaseFinished: 0}
	for k, v := range s.tally.byPhase {
		byPhase[k] = v
	}
	return byPhase, s.tally.held
}

// list returns copies of all reservations.
func (s *store) list() []reservation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]reservation, 0, len(s.byPod))
	for _, r := range s.byPod {
		out = append(out, *r)
	}
	return out
}
