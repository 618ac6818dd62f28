package workflowreservation

import (
	"sync/atomic"
	"unsafe"

	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// nodeIndex finds a node's reservations (the store's NodeReservations)
// from the NodeInfo the framework hands Filter and Score, without hashing
// the node's name or taking the store's lock: the framework gives a plugin
// no per-node state, but the scheduler's snapshot keeps one NodeInfo per
// node for as long as the node is in it (kube-scheduler's cache overwrites
// a changed node's NodeInfo in place, and makes a new node list only when a
// node comes or goes). So PreFilter, which the framework hands that list,
// maps each of its NodeInfos to the node's entry once per list, and Filter
// and Score look the NodeInfo up: one probe of a table keyed by the
// NodeInfo's address, read by every parallel Filter without a write.
//
// A NodeInfo the index does not know (a copy the framework made for a
// preemption dry run or a nominated pod, or a list it was not built from)
// finds nothing, and reservedOn looks the node up by name; so does a node
// whose entry the store dropped or replaced (NodeReservations.Gone): the
// store forgets the cached room of such an entry, which is in the slot,
// so that cached finds none.
type nodeIndex struct {
	// nodes is the snapshot's node list the index was built from.
	nodes []fwk.NodeInfo
	// slots is an open-addressing table (linear probing) of the list's
	// NodeInfos, keyed by their address: at least twice as many slots as
	// nodes, a power of two, so that a probe always ends. It is cheaper
	// than a Go map keyed by the pointer (no seeded hash, directory or
	// control words: docs/benchmarks.md), and Filter and Score look a node
	// up on every node of every cycle.
	// The address is a sound key: Go's heap objects do not move, and the
	// table keeps its NodeInfos referenced, so no other object can take an
	// address while it is in the table.
	slots []nodeSlot
	// shift keeps the top bits of the hash: log2(len(slots)) of them.
	shift uint
}

// nodeSlot is a node of the table: its NodeInfo, the store's entry of the
// node and what the node's reservations hold (the entry's cache, kept
// here): 64 bytes, so that reading a node's held room touches one cache
// line, which Filter and Score do on every node of every cycle. The table
// holds a power of two of them, at least two: an allocation of 128 bytes
// or more of a power-of-two size, which Go's allocator aligns to 64 bytes
// or more.
type nodeSlot struct {
	info  *framework.NodeInfo
	entry *reservations.NodeReservations
	held  reservations.HeldCache
}

// A nodeSlot is one cache line (on the 64-bit platforms tandem is built
// for): this fails to compile if it is not.
var (
	_ [unsafe.Sizeof(nodeSlot{}) - 64]byte
	_ [64 - unsafe.Sizeof(nodeSlot{})]byte
)

// nodeIndexRef holds the current index; a nil one knows no node.
type nodeIndexRef struct{ p atomic.Pointer[nodeIndex] }

// lookup returns the entry of nodeInfo, nil if the index does not know it
// or the store dropped it.
func (r *nodeIndexRef) lookup(nodeInfo fwk.NodeInfo) *reservations.NodeReservations {
	idx := r.p.Load()
	ni, ok := nodeInfo.(*framework.NodeInfo)
	if idx == nil || !ok {
		return nil
	}
	s := idx.find(ni)
	if s == nil || s.entry.Gone() {
		return nil
	}
	return s.entry
}

// slot returns where ni's probe sequence starts: Fibonacci hashing of its
// address (the multiplication spreads the address's low bits, which
// allocation aligns, into the top ones kept).
func (idx *nodeIndex) slot(ni *framework.NodeInfo) int {
	return int(uint64(uintptr(unsafe.Pointer(ni))) * 0x9E3779B97F4A7C15 >> idx.shift)
}

// cached returns what the node of nodeInfo holds against a pod without a
// reservation of its own, if the index knows the node and that is cached
// for the NodeInfo's generation (NodeReservations.Cached).
func (r *nodeIndexRef) cached(nodeInfo fwk.NodeInfo) (reservations.Held, bool) {
	idx := r.p.Load()
	ni, ok := nodeInfo.(*framework.NodeInfo)
	if idx == nil || !ok {
		return reservations.Held{}, false
	}
	if s := idx.find(ni); s != nil {
		return s.held.Read(ni.GetGeneration())
	}
	return reservations.Held{}, false
}

// find returns the slot of ni, nil if the table does not hold it.
func (idx *nodeIndex) find(ni *framework.NodeInfo) *nodeSlot {
	mask := len(idx.slots) - 1
	for i := idx.slot(ni); ; i = (i + 1) & mask {
		s := &idx.slots[i]
		if s.info == ni {
			return s
		}
		if s.info == nil {
			return nil
		}
	}
}

// update makes the index of nodes, the snapshot's node list, unless it was
// built from that list already.
func (r *nodeIndexRef) update(store *reservations.Store, nodes []fwk.NodeInfo) {
	if len(nodes) == 0 {
		return
	}
	if idx := r.p.Load(); idx != nil && len(idx.nodes) == len(nodes) && &idx.nodes[0] == &nodes[0] {
		return
	}
	names := make([]string, 0, len(nodes))
	infos := make([]*framework.NodeInfo, 0, len(nodes))
	for _, ni := range nodes {
		if p, ok := ni.(*framework.NodeInfo); ok && p.Node() != nil {
			names, infos = append(names, p.Node().Name), append(infos, p)
		}
	}
	idx := &nodeIndex{nodes: nodes, shift: 63}
	size := 2
	for size < 2*len(infos) {
		size <<= 1
		idx.shift--
	}
	idx.slots = make([]nodeSlot, size)
	mask := size - 1
	at := make([]*nodeSlot, len(infos))
	caches := make([]*reservations.HeldCache, len(infos))
	for k, ni := range infos {
		i := idx.slot(ni)
		for idx.slots[i].info != nil && idx.slots[i].info != ni {
			i = (i + 1) & mask
		}
		idx.slots[i].info = ni
		at[k], caches[k] = &idx.slots[i], &idx.slots[i].held
	}
	for k, entry := range store.Nodes(names, caches) {
		at[k].entry = entry
	}
	r.p.Store(idx)
}
