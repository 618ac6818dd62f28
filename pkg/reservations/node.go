package reservations

import (
	"slices"
	"sync/atomic"

	"github.com/tandem-scheduler/tandem/contract"
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
// reads need is a HeldCache, which the index keeps beside its own entry of
// the node (Store.Nodes), so that a node costs Filter one cache line. The
// list itself is read under the store's lock (Store.WithNode).
type NodeReservations struct {
	// held is what the list held against a pod without a reservation of
	// its own, for one generation of the node's pods: the index's, or own.
	held *HeldCache
	own  HeldCache
	// gone is set when the store dropped the entry: its node was deleted,
	// or the entry went out of every index with its last reservation.
	gone atomic.Bool

	name string
	list []*Reservation
	// facts are what the hold rule reads of each reservation of list, in
	// list's order.
	facts []Facts
	// indexed is set while an index of the scheduler's nodes holds the
	// entry (Store.Nodes): it is kept when its last reservation goes.
	indexed bool
	// version counts the changes to list.
	version atomic.Uint64
	// scan is what the plugin last read from the node's pods (opaque
	// here), kept with the reservations so that it goes when they do.
	scan atomic.Pointer[any]
}

// HeldCache is a node's held room as last computed, small enough to share
// a cache line with the index's entry of the node: a reader that followed
// a pointer to a cached value on every node of every cycle paid a cache
// miss for it. It is a sequence lock: a writer makes seq odd, writes, and
// makes it even again; a reader that sees seq odd, or changed by the time
// it has read the fields, has read nothing it may use. Writers are Cache,
// under the store's read lock (two may race: one gives up), and the
// store's changes, under its write lock, which also forget the value of an
// entry the store drops (a reader of the index then finds nothing cached).
type HeldCache struct {
	seq atomic.Uint64
	// generation is the generation of the node's pods the value is for;
	// anyGeneration for a node without reservations (nothing held,
	// whatever its pods), noGeneration if nothing is cached.
	generation atomic.Int64
	milliCPU   atomic.Int64
	memory     atomic.Int64
	pods       atomic.Int64
	// rest holds the value's ephemeral storage, scalar resources and
	// ports, nil if it has none: rare, and not worth room of their own.
	rest atomic.Pointer[Held]
}

const (
	noGeneration  int64 = -1
	anyGeneration int64 = -2
)

// Read returns the cached value for generation (a NodeInfo's), false if
// there is none or a writer got in the way. It takes no lock and allocates
// nothing.
func (c *HeldCache) Read(generation int64) (Held, bool) {
	seq := c.seq.Load()
	if seq&1 != 0 {
		return Held{}, false
	}
	if g := c.generation.Load(); g != generation && g != anyGeneration {
		return Held{}, false
	}
	h := Held{Amount: contract.Amount{MilliCPU: c.milliCPU.Load(), Memory: c.memory.Load(), Pods: c.pods.Load()}}
	if rest := c.rest.Load(); rest != nil {
		h.Amount.EphemeralStorage, h.Amount.Scalar, h.Ports = rest.Amount.EphemeralStorage, rest.Amount.Scalar, rest.Ports
	}
	if c.seq.Load() != seq {
		return Held{}, false
	}
	return h, true
}

// write caches held for generation, unless another writer is writing
// (only Cache's callers race, under the store's read lock; the write lock
// excludes them, so that the store's own writes always happen).
func (c *HeldCache) write(generation int64, held Held) {
	seq := c.seq.Load()
	if seq&1 != 0 || !c.seq.CompareAndSwap(seq, seq+1) {
		return
	}
	c.generation.Store(generation)
	c.milliCPU.Store(held.Amount.MilliCPU)
	c.memory.Store(held.Amount.Memory)
	c.pods.Store(held.Amount.Pods)
	var rest *Held
	if held.Amount.EphemeralStorage != 0 || len(held.Amount.Scalar) > 0 || len(held.Ports) > 0 {
		rest = &Held{Amount: contract.Amount{EphemeralStorage: held.Amount.EphemeralStorage, Scalar: held.Amount.Scalar}, Ports: held.Ports}
	}
	c.rest.Store(rest)
	c.seq.Store(seq + 2)
}

// copyFrom takes over old's cached value; under the store's write lock.
func (c *HeldCache) copyFrom(old *HeldCache) {
	g := old.generation.Load()
	h, ok := old.Read(g)
	if !ok {
		g, h = noGeneration, Held{}
	}
	c.write(g, h)
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
	return n.held.Read(generation)
}

// Cache keeps what the node's reservations hold against a pod without a
// reservation of its own, for this generation of the node's pods and the
// reservations as they are. It must be called under the store's lock (read
// or write: Store.WithNode), so that they cannot change meanwhile.
func (n *NodeReservations) Cache(generation int64, held Held) {
	n.held.write(generation, held)
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
	n.version.Add(1)
	n.forget()
	if len(n.list) == 0 {
		// Nothing to scan for: the pods it read may go.
		n.scan.Store(nil)
	}
}

// forget drops the cached held room: nothing is known for any generation
// of the node's pods, unless the node holds no reservation, which holds
// nothing whatever its pods. Under the store's write lock.
func (n *NodeReservations) forget() {
	if len(n.list) == 0 {
		n.held.write(anyGeneration, Held{})
	} else {
		n.held.write(noGeneration, Held{})
	}
}

// nodeLocked returns node's entry, made if there is none.
func (s *Store) nodeLocked(node string) *NodeReservations {
	n := s.byNode[node]
	if n == nil {
		n = &NodeReservations{name: node}
		n.held = &n.own
		n.forget()
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
	n.held.write(noGeneration, Held{})
}

// Nodes returns the entries of the nodes named, in their order, made for
// those without reservations: an index of the scheduler's nodes keeps
// them, and reads their held room without the store's lock from caches[i]
// (nil: the entry's own), which the index keeps beside its entry of the
// node. The entries are made anew, side by side in the order of names; the
// entries they replace are gone, and their cached room forgotten. It drops the entries of every other node
// that holds no reservation, which an earlier call returned, and gives
// those that still hold some a cache of their own: the nodes named are all
// the scheduler has.
func (s *Store) Nodes(names []string, caches []*HeldCache) []*NodeReservations {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := make([]NodeReservations, len(names))
	out := make([]*NodeReservations, len(names))
	want := make(map[string]struct{}, len(names))
	for i, name := range names {
		want[name] = struct{}{}
		n := &fresh[i]
		n.name, n.indexed, n.held = name, true, &n.own
		if i < len(caches) && caches[i] != nil {
			n.held = caches[i]
		}
		s.replaceLocked(n)
		out[i] = n
	}
	for name, n := range s.byNode {
		if _, ok := want[name]; !ok && n.indexed {
			if len(n.list) == 0 {
				s.dropLocked(n)
				continue
			}
			own := &NodeReservations{name: name}
			own.held = &own.own
			s.replaceLocked(own)
		}
	}
	return out
}

// replaceLocked makes n the entry of its node, taking over the reservations
// and what was computed of them from the node's entry, if any, which is
// gone (whoever holds it looks the node up again).
func (s *Store) replaceLocked(n *NodeReservations) {
	old := s.byNode[n.name]
	if old == nil {
		n.forget()
		s.byNode[n.name] = n
		return
	}
	n.list, n.facts = old.list, old.facts
	old.list, old.facts = nil, nil
	n.scan.Store(old.scan.Load())
	n.held.copyFrom(old.held)
	n.version.Store(old.version.Load())
	s.byNode[n.name] = n
	s.dropLocked(old)
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
