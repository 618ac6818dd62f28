package workflowreservation

import (
	"sync/atomic"

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
// and Score look the NodeInfo up in that map: one lookup keyed by a
// pointer, read by every parallel Filter without a write.
//
// A NodeInfo the index does not know (a copy the framework made for a
// preemption dry run or a nominated pod, or a list it was not built from)
// finds nothing, and reservedOn looks the node up by name; so does an entry
// the store dropped (NodeReservations.Gone).
type nodeIndex struct {
	// nodes is the snapshot's node list the index was built from.
	nodes []fwk.NodeInfo
	// byInfo is keyed by the scheduler's own NodeInfo type (a pointer:
	// the map's fastest key); a NodeInfo of another type finds nothing.
	byInfo map[*framework.NodeInfo]*reservations.NodeReservations
}

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
	n := idx.byInfo[ni]
	if n == nil || n.Gone() {
		return nil
	}
	return n
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
	entries := store.Nodes(names)
	byInfo := make(map[*framework.NodeInfo]*reservations.NodeReservations, len(infos))
	for i, ni := range infos {
		byInfo[ni] = entries[i]
	}
	r.p.Store(&nodeIndex{nodes: nodes, byInfo: byInfo})
}
