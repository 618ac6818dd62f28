package reservations

import (
	"slices"
	"sync/atomic"
)

// NodeReservations are one node's reservations, sorted by runner name (then
// namespace) so that a pod finds its runner's by binary search, and what
// they held against a pod without a reservation of its own, as last
// computed for the node's pods.
//
// Filter and Score ask for that held room on every node of every cycle,
// in parallel: an index of the scheduler's nodes (Store.Nodes) keeps a
// pointer to each node's NodeReservations, and reads it without the
// store's lock and without looking the node up by name. So what those
// reads need is atomic: the number of reservations, a version that every
// change bumps, the cached value, and whether the store still keeps this
// entry for the node (Gone). The list itself is read under the store's
// lock (Store.WithNode).
type NodeReservations struct {
	name string
	list []*Reservation
	// facts are what the hold rule reads of each reservation of list, in
	// list's order.
	facts []Facts
	// indexed is set while an index of the scheduler's nodes holds the
	// entry (Store.Nodes): it is kept when its last reservation goes.
	indexed bool

	// count is len(list).
	count atomic.Int32
	// version counts the changes to list: what was computed for the node
	// stays right while it and the node's pods do not change.
	version atomic.Uint64
	// gone is set when the store dropped the entry: its node was deleted,
	// or the entry went out of every index with its last reservation.
	gone atomic.Bool
	// held is what the list held against a pod without a reservation of
	// its own, for one version and one generation of the node's pods.
	held atomic.Pointer[heldEntry]
	// scan is what the plugin last read from the node's pods (opaque
	// here), kept with the reservations so that it goes when they do.
	scan atomic.Pointer[any]
}

type heldEntry struct {
	version    uint64
	generation int64
	held       Held
}

// Name is the node's name.
func (n *NodeReservations) Name() string { return n.name }

// Reservations returns the node's reservations, sorted by runner name
// (then namespace). The caller must hold the store's lock (Store.WithNode)
// and must not change them.
func (n *NodeReservations) Reservations() []*Reservation { return n.list }

// Facts returns what the hold rule reads of each of the node's
// reservations, in the order of Reservations. The caller must hold the
// store's lock (Store.WithNode) and must not change them.
func (n *NodeReservations) Facts() []Facts { return n.facts }

// insert puts r at i of the list; under the store's write lock.
func (n *NodeReservations) insert(i int, r *Reservation) {
	f := r.Facts()
	n.list = slices.Insert(n.list, i, r)
	n.facts = slices.Insert(n.facts, i, f)
	n.changed()
}

// remove deletes r from the list; under the store's write lock.
func (n *NodeReservations) remove(r *Reservation) {
	if i := slices.Index(n.list, r); i >= 0 {
		n.list = slices.Delete(n.list, i, i+1)
		n.facts = slices.Delete(n.facts, i, i+1)
	}
	n.changed()
}

// update notes that r, one of the list, changed; what the node holds
// changes only if r's facts did. Under the store's write lock.
func (n *NodeReservations) update(r *Reservation) {
	i := slices.Index(n.list, r)
	if i < 0 {
		return
	}
	if f := r.Facts(); !f.equal(&n.facts[i]) {
		n.facts[i] = f
		n.changed()
	}
}

// Gone reports whether the store no longer keeps this entry: whoever kept
// a pointer to it must look the node up again (Store.WithNode).
func (n *NodeReservations) Gone() bool { return n.gone.Load() }

// Cached returns what the node's reservations hold against a pod without a
// reservation of its own, if that was cached (Cache) for this generation of
// the node's pods and the reservations have not changed since, or the node
// holds none (zero, ok). It takes no lock, and allocates nothing: Filter
// and Score call it for every node of every cycle. A Gone entry answers
// nothing.
func (n *NodeReservations) Cached(generation int64) (Held, bool) {
	if n.gone.Load() {
		return Held{}, false
	}
	if n.count.Load() == 0 {
		return Held{}, true
	}
	if h := n.held.Load(); h != nil && h.version == n.version.Load() && h.generation == generation {
		return h.held, true
	}
	return Held{}, false
}

// Cache keeps what the node's reservations hold against a pod without a
// reservation of its own, for this generation of the node's pods and the
// reservations as they are. It must be called under the store's lock (read
// or write: Store.WithNode), so that they cannot change meanwhile.
func (n *NodeReservations) Cache(generation int64, held Held) {
	n.held.Store(&heldEntry{version: n.version.Load(), generation: generation, held: held})
}

// Scan returns what SetScan kept for the node, nil if nothing.
func (n *NodeReservations) Scan() any {
	if v := n.scan.Load(); v != nil {
		return *v
	}
	return nil
}

// SetScan keeps v for Scan. It may be called under the store's read lock.
func (n *NodeReservations) SetScan(v any) { n.scan.Store(&v) }

// changed notes a change to the list; under the store's write lock.
func (n *NodeReservations) changed() {
	n.count.Store(int32(len(n.list)))
	n.version.Add(1)
	if len(n.list) == 0 {
		// Nothing to scan for: the pods it read may go.
		n.scan.Store(nil)
	}
}

// nodeLocked returns node's entry, made if there is none.
func (s *Store) nodeLocked(node string) *NodeReservations {
	n := s.byNode[node]
	if n == nil {
		n = &NodeReservations{name: node}
		s.byNode[node] = n
	}
	return n
}

// dropLocked deletes n from the store and marks it gone.
func (s *Store) dropLocked(n *NodeReservations) {
	if s.byNode[n.name] == n {
		delete(s.byNode, n.name)
	}
	n.gone.Store(true)
}

// Nodes returns the entries of the nodes named, in their order, made for
// those without reservations: an index of the scheduler's nodes keeps
// them, and reads their held room without the store's lock
// (NodeReservations.Cached). The entries are made anew, side by side in
// the order of names, so that reading them in that order (as Filter goes
// through the scheduler's node list) reads memory in order; the entries
// they replace are gone. It drops the entries of every other node that
// holds no reservation, which an earlier call returned: the nodes named
// are all the scheduler has.
func (s *Store) Nodes(names []string) []*NodeReservations {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := make([]NodeReservations, len(names))
	out := make([]*NodeReservations, len(names))
	want := make(map[string]struct{}, len(names))
	for i, name := range names {
		want[name] = struct{}{}
		n := &fresh[i]
		n.name, n.indexed = name, true
		if old := s.byNode[name]; old != nil {
			n.list, n.facts = old.list, old.facts
			old.list, old.facts = nil, nil
			// Another index holding old looks the node up again.
			old.gone.Store(true)
			n.scan.Store(old.scan.Load())
			n.held.Store(old.held.Load())
			n.version.Store(old.version.Load())
		}
		n.count.Store(int32(len(n.list)))
		s.byNode[name] = n
		out[i] = n
	}
	for name, n := range s.byNode {
		if _, ok := want[name]; !ok && n.indexed {
			n.indexed = false
			if len(n.list) == 0 {
				s.dropLocked(n)
			}
		}
	}
	return out
}

// ReleaseNode deletes every reservation on node (the node was deleted) and
// returns them; the node's entry is gone.
func (s *Store) ReleaseNode(node string) []*Reservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.byNode[node]
	if n == nil {
		return nil
	}
	for _, r := range n.list {
		s.tally.count(r, -1)
		delete(s.byPod, r.Runner)
	}
	list := n.list
	n.list, n.facts = nil, nil
	n.changed()
	s.dropLocked(n)
	return list
}

// CachedOn is NodeReservations.Cached of node's entry, found by name under
// the store's read lock; a node without an entry holds nothing.
func (s *Store) CachedOn(node string, generation int64) (held Held, ok bool) {
	s.mu.RLock()
	n := s.byNode[node]
	s.mu.RUnlock()
	if n == nil {
		return Held{}, true
	}
	return n.Cached(generation)
}

// WithNode calls fn with node's entry (nil if it has none) under the read
// lock. fn must not change it, other than its cache and scan (Cache,
// SetScan), nor call the store.
func (s *Store) WithNode(node string, fn func(n *NodeReservations)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fn(s.byNode[node])
}

// NodeVersion returns the version of node's reservations (0 if it has no
// entry), for tests.
func (s *Store) NodeVersion(node string) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := s.byNode[node]; n != nil {
		return n.version.Load()
	}
	return 0
}
