package workflowreservation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// fourNodes is a node list as the scheduler's snapshot hands it to
// PreFilter: n0 to n3, 4 cpu each, nothing on them.
func fourNodes() []fwk.NodeInfo {
	var out []fwk.NodeInfo
	for i := range 4 {
		out = append(out, nodeInfo(st.MakeNode().Name(fmt.Sprintf("n%d", i)).Capacity(units("4")).Obj()))
	}
	return out
}

// heldOn runs a plain pod's cycle up to Filter on nodes and returns what
// the plugin counts as held on nodes[i].
func heldOn(t *testing.T, pl *WorkflowReservation, nodes []fwk.NodeInfo, i int) reservations.Held {
	t.Helper()
	cs := framework.NewCycleState()
	pod := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj()
	if _, status := pl.PreFilter(context.Background(), cs, pod, nodes); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	s, err := getCycleState(cs)
	if err != nil {
		t.Fatal(err)
	}
	return pl.reservedOn(s, nodes[i])
}

// Filter and Score find a node's reservations through the index PreFilter
// made of the node list, keyed by NodeInfo: no name is looked up, and what
// they read follows the node's reservations and pods as they change.
func TestHeldRoomThroughTheNodeIndex(t *testing.T) {
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	nodes := fourNodes()
	pl.store.Take(oneUnitReservation("r1")) // on n1
	n1 := nodes[1]
	if got := heldOn(t, pl, nodes, 1); got.Amount.MilliCPU != 1000 {
		t.Fatalf("n1 holds %dm, want r1's 1000m", got.Amount.MilliCPU)
	}
	for i, ni := range nodes {
		if n := pl.index.lookup(ni); n == nil || n.Name() != ni.Node().Name {
			t.Errorf("node %d (%s): index entry %v, want the node's", i, ni.Node().Name, n)
		}
	}

	// The node's reservations change: the same entry, another answer.
	pl.store.Take(&reservations.Reservation{Runner: key("r2"), RunnerUID: "r2", Node: "n1", Size: contract.Amount{MilliCPU: 2000, Pods: 1}})
	if got := heldOn(t, pl, nodes, 1); got.Amount.MilliCPU != 3000 {
		t.Errorf("after r2 was reserved on n1: %dm held, want 3000m", got.Amount.MilliCPU)
	}
	// Its pods change (the snapshot overwrites its NodeInfo in place, a
	// new generation): r1's workflow pod arrives, and r1 holds nothing
	// beyond it.
	withWorkflow := nodeInfo(n1.Node(), workflowPod("r1").Req(units("1")).Node("n1").Obj())
	*(n1.(*framework.NodeInfo)) = *(withWorkflow.(*framework.NodeInfo))
	if got := heldOn(t, pl, nodes, 1); got.Amount.MilliCPU != 2000 {
		t.Errorf("after r1's workflow pod came to n1: %dm held, want r2's 2000m", got.Amount.MilliCPU)
	}

	// A copy of the NodeInfo (a preemption dry run, a nominated pod) is not
	// in the index: it is looked up by name, with the same answer.
	if n := pl.index.lookup(n1.Snapshot()); n != nil {
		t.Errorf("a copy of n1's NodeInfo is in the index: %v", n)
	}
	cs := framework.NewCycleState()
	pod := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj()
	if _, status := pl.PreFilter(context.Background(), cs, pod, nodes); !status.IsSuccess() {
		t.Fatal(status)
	}
	s, _ := getCycleState(cs)
	if got := pl.reservedOn(s, n1.Snapshot()); got.Amount.MilliCPU != 2000 {
		t.Errorf("through a copy of n1: %dm held, want 2000m", got.Amount.MilliCPU)
	}

	// A node comes: the snapshot makes a new list, and PreFilter a new
	// index; the entries of the old one are gone.
	old := pl.index.lookup(n1)
	grown := append(append([]fwk.NodeInfo(nil), nodes...), nodeInfo(st.MakeNode().Name("n4").Capacity(units("4")).Obj()))
	if got := heldOn(t, pl, grown, 1); got.Amount.MilliCPU != 2000 {
		t.Errorf("after the list grew: %dm held on n1, want 2000m", got.Amount.MilliCPU)
	}
	if !old.Gone() || pl.index.lookup(n1) == old || pl.index.lookup(grown[4]) == nil {
		t.Errorf("after the list grew: old entry gone %t, n1 still on it %t, n4 indexed %t; want gone, no, yes",
			old.Gone(), pl.index.lookup(n1) == old, pl.index.lookup(grown[4]) != nil)
	}
}

// The room held on a node whose value is cached is read without the
// store's lock: while a writer waits for the lock (and so keeps every new
// reader out), Filter still answers for such a node, and Score too; so
// kube-scheduler's 16 parallel Filter workers never queue on it, nor on
// any shared write, for a node whose reservations and pods did not change.
func TestCachedHeldRoomTakesNoLock(t *testing.T) {
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	nodes := fourNodes()
	pl.store.Take(oneUnitReservation("r1"))
	heldOn(t, pl, nodes, 1) // computed, and cached

	// A reader holds the lock until release; a writer waits for it.
	release, reading := make(chan struct{}), make(chan struct{})
	go pl.store.WithNode("n1", func(*reservations.NodeReservations) {
		close(reading)
		<-release
	})
	<-reading
	written := make(chan struct{})
	go func() {
		pl.store.Take(&reservations.Reservation{Runner: key("w"), RunnerUID: "w", Node: "n3", Size: contract.Amount{MilliCPU: 1, Pods: 1}})
		close(written)
	}()
	defer func() {
		close(release)
		<-written
	}()
	// Wait until the writer waits: a new reader then blocks.
	deadline := time.Now().Add(10 * time.Second)
	for blocked := false; !blocked; {
		done := make(chan struct{})
		go func() {
			pl.store.Get(key("r1"))
			close(done)
		}()
		select {
		case <-done:
			if time.Now().After(deadline) {
				t.Fatal("the writer never waited for the lock")
			}
		case <-time.After(50 * time.Millisecond):
			blocked = true
		}
	}

	cs := framework.NewCycleState()
	pod := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj()
	s := &cycleState{kind: kindOther, request: reservations.PodAmount(pod)}
	cs.Write(stateKey, s)
	answered := make(chan reservations.Held, 1)
	go func() { answered <- pl.reservedOn(s, nodes[1]) }()
	select {
	case got := <-answered:
		if got.Amount.MilliCPU != 1000 {
			t.Errorf("n1 holds %dm, want r1's 1000m", got.Amount.MilliCPU)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading n1's cached held room waited for the store's lock")
	}
}

func TestNodeIndexIgnoresUnknownNodeInfos(t *testing.T) {
	var idx nodeIndexRef
	ni := nodeInfo(st.MakeNode().Name("n1").Obj())
	if n := idx.lookup(ni); n != nil {
		t.Errorf("an empty index found %v", n)
	}
	store := reservations.NewStore()
	idx.update(store, []fwk.NodeInfo{ni})
	if n := idx.lookup(nodeInfo(st.MakeNode().Name("n1").Obj())); n != nil {
		t.Errorf("another NodeInfo of n1 found %v: only the list's are indexed", n)
	}
	store.Take(&reservations.Reservation{Runner: types.NamespacedName{Namespace: "arc", Name: "r"}, RunnerUID: "r", Node: "n1",
		Size: contract.Amount{MilliCPU: 1, Pods: 1}, Source: contract.SourceAnnotation})
	if got := store.ReleaseNode("n1"); len(got) != 1 {
		t.Fatalf("released %d", len(got))
	}
	if n := idx.lookup(ni); n != nil {
		t.Errorf("the entry of a deleted node was found: %v", n)
	}
}

// Found in review: with nothing held anywhere and no runner nominated as
// the informer shows it, Filter and Score skip the held room; but the
// framework may add a nominated runner to a copy of the cycle state
// (AddPod) before the informer shows its nomination, and that runner's
// workflow room must still be counted, or another pod takes it and the
// runner preempts again.
func TestNothingHeldStillCountsANominatedRunner(t *testing.T) {
	ctx := context.Background()
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	setLayout(pl, true, false) // the shipped layout: the plugin runs the Fit
	node := st.MakeNode().Name("n1").Capacity(units("3")).Obj()
	nominated := runnerPod("r9").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Req(units("500m")).Obj()
	pod := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, pod, nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	// As the framework filters against nominated pods: the runner is on a
	// copy of the node and of the state.
	ni := nodeInfo(node, nominated)
	state := cs.Clone()
	if status := pl.AddPod(ctx, state, pod, podInfo(t, nominated), ni); !status.IsSuccess() {
		t.Fatalf("AddPod: %v", status)
	}
	// 3 cpu, the runner's 500m and its workflow pod's 2: 500m left.
	if status := pl.Filter(ctx, state, pod, ni); status.IsSuccess() {
		t.Error("a 1-cpu pod passed Filter on the room of a nominated runner's workflow pod")
	}
}

// Found in review: every profile of a scheduler shares one index of the
// snapshot's nodes. With one per profile, each profile's PreFilter made the
// store's entries anew and the other profile's index pointed at gone
// entries, through the locked lookup by name, for as long as the node list
// did not change.
func TestProfilesShareTheNodeIndex(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := NewFactory(controllers.NewFeeder(nil))
	var pls []*WorkflowReservation
	for _, profile := range []string{"a", "b"} {
		h := &fakeHandle{client: fake.NewClientset(), recorder: events.NewFakeRecorder(10), profile: profile}
		p, err := factory(ctx, defaultArgs(), h)
		if err != nil {
			t.Fatal(err)
		}
		pls = append(pls, p.(*WorkflowReservation))
	}
	nodes := fourNodes()
	pls[0].store.Take(oneUnitReservation("r1"))
	for range 2 {
		for _, pl := range pls {
			heldOn(t, pl, nodes, 1)
		}
	}
	for i, pl := range pls {
		if n := pl.index.lookup(nodes[1]); n == nil || n.Gone() {
			t.Errorf("profile %d: n1's entry %v, want a live one after both profiles' cycles", i, n)
		}
	}
}

// The index's table finds every NodeInfo of a list of any size, each its
// own node's entry and cached room, and nothing for a NodeInfo that is not
// in the list.
func TestNodeIndexFindsEveryNode(t *testing.T) {
	store := reservations.NewStore()
	for _, n := range []int{1, 2, 3, 500, 1025} {
		nodes := make([]fwk.NodeInfo, n)
		for i := range nodes {
			nodes[i] = nodeInfo(st.MakeNode().Name(fmt.Sprintf("n%d", i)).Capacity(units("4")).Obj())
		}
		var idx nodeIndexRef
		idx.update(store, nodes)
		for i, ni := range nodes {
			if e := idx.lookup(ni); e == nil || e.Name() != ni.Node().Name {
				t.Fatalf("%d nodes: node %d found %v, want its entry", n, i, e)
			}
			// Each node's room cached as the store caches it: the slot's.
			store.WithNode(ni.Node().Name, func(e *reservations.NodeReservations) {
				e.Cache(ni.GetGeneration(), reservations.Held{Amount: contract.Amount{MilliCPU: int64(i + 1)}})
			})
		}
		for i, ni := range nodes {
			if h, ok := idx.cached(ni); !ok || h.Amount.MilliCPU != int64(i+1) {
				t.Fatalf("%d nodes: node %d reads %dm cached (%t), want its own %dm", n, i, h.Amount.MilliCPU, ok, i+1)
			}
		}
		if e := idx.lookup(nodes[0].Snapshot()); e != nil {
			t.Errorf("%d nodes: a NodeInfo not in the list found %s's entry", n, e.Name())
		}
	}
}

// A node's entry the store drops (the node was deleted) takes its cached
// room with it: a reservation on a node of that name taken before the
// scheduler's node list changes is counted on the NodeInfo the index still
// holds, not hidden behind the dropped entry's "nothing held".
func TestDroppedNodeForgetsItsCachedRoom(t *testing.T) {
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	nodes := fourNodes()
	pl.store.Take(oneUnitReservation("r1")) // on n1
	// One on n2, so that something is held when n1 holds nothing.
	pl.store.Take(&reservations.Reservation{Runner: key("r0"), RunnerUID: "r0", Node: "n2", Size: contract.Amount{MilliCPU: 1000, Pods: 1}})
	if got := heldOn(t, pl, nodes, 1); got.Amount.MilliCPU != 1000 {
		t.Fatalf("n1 holds %dm, want r1's 1000m", got.Amount.MilliCPU)
	}
	if got := pl.store.ReleaseNode("n1"); len(got) != 1 {
		t.Fatalf("ReleaseNode(n1) released %d reservations, want r1", len(got))
	}
	if got := heldOn(t, pl, nodes, 1); got.Amount.MilliCPU != 0 {
		t.Fatalf("after n1 was deleted: %dm held, want nothing", got.Amount.MilliCPU)
	}
	pl.store.Take(oneUnitReservation("r2")) // on n1 again
	if got := heldOn(t, pl, nodes, 1); got.Amount.MilliCPU != 1000 {
		t.Errorf("r2 taken on n1 after its entry was dropped: %dm held, want r2's 1000m", got.Amount.MilliCPU)
	}
}

// BenchmarkNodeIndexLookup compares a lookup in the index's table with one
// in a Go map keyed by the same NodeInfo pointers, in a shuffled order, at
// 500 and 15,000 nodes (docs/benchmarks.md):
//
//	go test ./pkg/workflowreservation -run '^$' -bench NodeIndexLookup -count 3
func BenchmarkNodeIndexLookup(b *testing.B) {
	for _, n := range []int{500, 15000} {
		nodes := make([]fwk.NodeInfo, n)
		for i := range nodes {
			nodes[i] = nodeInfo(st.MakeNode().Name(fmt.Sprintf("n%d", i)).Obj())
		}
		var idx nodeIndexRef
		idx.update(reservations.NewStore(), nodes)
		byInfo := make(map[*framework.NodeInfo]*reservations.NodeReservations, n)
		for _, ni := range nodes {
			byInfo[ni.(*framework.NodeInfo)] = idx.lookup(ni)
		}
		order := make([]*framework.NodeInfo, n)
		for i, k := range rand.Perm(n) {
			order[i] = nodes[k].(*framework.NodeInfo)
		}
		b.Run(fmt.Sprintf("%dNodes/table", n), func(b *testing.B) {
			table := idx.p.Load()
			for i := 0; b.Loop(); i++ {
				if table.find(order[i%n]) == nil {
					b.Fatal("a node of the list is not in the table")
				}
			}
		})
		b.Run(fmt.Sprintf("%dNodes/map", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if byInfo[order[i%n]] == nil {
					b.Fatal("a node of the list is not in the map")
				}
			}
		})
	}
}
