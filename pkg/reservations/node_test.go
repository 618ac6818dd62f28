package reservations

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-scheduler/tandem/contract"
)

// An index of the scheduler's nodes keeps the store's entries of its nodes
// and reads them without the lock: an entry stays while the index holds it,
// even with no reservation, and one the store no longer keeps says so
// (Gone), so that nobody reads a node's room from an entry that no longer
// gets the node's reservations.
func TestNodesKeepsTheIndexedEntries(t *testing.T) {
	s := NewStore()
	a := &Reservation{Runner: key("a"), RunnerUID: "a", Node: "n1", Size: contract.Amount{MilliCPU: 1000, Pods: 1}}
	s.Take(a)
	first := s.Nodes([]string{"n1", "n2"}, nil)
	if len(first) != 2 || first[0].Name() != "n1" || first[1].Name() != "n2" {
		t.Fatalf("entries %v, want n1 and n2 in that order", first)
	}
	if got := len(first[0].Reservations()); got != 1 {
		t.Errorf("n1's entry holds %d reservations, want a's", got)
	}
	// The last reservation of an indexed node goes: its entry stays, and
	// gets the node's next one.
	s.Release(a.Runner, "")
	if first[0].Gone() {
		t.Fatal("the indexed entry of n1 went with its last reservation")
	}
	if h, ok := first[0].Cached(1); !ok || !h.Amount.IsZero() {
		t.Errorf("n1 without reservations: held %v (known %t), want nothing, known", h.Amount, ok)
	}
	b := &Reservation{Runner: key("b"), RunnerUID: "b", Node: "n1", Size: contract.Amount{MilliCPU: 500, Pods: 1}}
	s.Take(b)
	if got := first[0].Reservations(); len(got) != 1 || got[0] != b {
		t.Fatalf("n1's indexed entry holds %v, want b", got)
	}
	if _, ok := first[0].Cached(1); ok {
		t.Error("n1 holds b, never cached: the entry answered from a cache")
	}

	// A new index of n2 and n3: new entries for both, holding what the
	// old ones held (n2's old entry is gone); n1, with a reservation, is
	// in no index now.
	second := s.Nodes([]string{"n2", "n3"}, nil)
	if !first[0].Gone() || !first[1].Gone() {
		t.Errorf("the entries of the first index: n1 gone %t, n2 gone %t; want both", first[0].Gone(), first[1].Gone())
	}
	if second[0].Gone() || second[1].Gone() || second[0] == first[1] {
		t.Fatal("the second index's entries are gone, or n2's is the old one")
	}
	// n1 is in no index now: a new entry of its own holds b, and the one
	// the first index kept is gone with its cache.
	var n1 *NodeReservations
	s.WithNode("n1", func(n *NodeReservations) { n1 = n })
	if n1 == first[0] || len(n1.Reservations()) != 1 || n1.Reservations()[0] != b {
		t.Fatalf("n1 after the second index: %v, want a new entry holding b", n1)
	}
	// n1 is in no index: its entry goes with its last reservation.
	s.Release(b.Runner, "")
	if !n1.Gone() {
		t.Error("n1, in no index and without reservations, kept its entry")
	}
	// n3 is deleted: its entry is gone, whatever the index.
	s.Take(&Reservation{Runner: key("c"), RunnerUID: "c", Node: "n3", Size: contract.Amount{MilliCPU: 500, Pods: 1}})
	if got := s.ReleaseNode("n3"); len(got) != 1 || !second[1].Gone() {
		t.Errorf("ReleaseNode(n3) returned %d reservations, n3's entry gone %t; want 1, gone", len(got), second[1].Gone())
	}
	if _, ok := second[1].Cached(1); ok {
		t.Error("a gone entry answered from its cache")
	}
}

// What Cached answers: nothing held on a node without reservations, the
// cached value while the node's reservations and pods are as they were
// when it was cached, and nothing known once either changed.
func TestNodeCached(t *testing.T) {
	s := NewStore()
	n := s.Nodes([]string{"n1"}, nil)[0]
	if h, ok := n.Cached(7); !ok || !h.Amount.IsZero() {
		t.Fatalf("no reservations: %v, %t; want nothing held, known", h.Amount, ok)
	}
	s.Take(&Reservation{Runner: key("a"), RunnerUID: "a", Node: "n1", Size: contract.Amount{MilliCPU: 1000, Pods: 1}})
	held := Held{Amount: contract.Amount{MilliCPU: 1000, Pods: 1}}
	s.WithNode("n1", func(n *NodeReservations) { n.Cache(7, held) })
	if h, ok := n.Cached(7); !ok || !cmp.Equal(h, held) {
		t.Fatalf("cached for generation 7: %v, %t; want %v", h, ok, held)
	}
	if _, ok := n.Cached(8); ok {
		t.Error("the node's pods changed (generation 8), the cache still answered")
	}
	// The runner is seen bound: nothing the hold rule reads changed.
	s.MarkBound(key("a"), "a")
	if _, ok := n.Cached(7); !ok {
		t.Error("the runner was seen bound, which changes nothing held: the cache no longer answered")
	}
	if claimed, _ := s.Claim(key("a"), "a", "wf", "n1"); !claimed {
		t.Fatal("the claim was refused")
	}
	if _, ok := n.Cached(7); ok {
		t.Error("a reservation of the node was claimed, the cache still answered")
	}
}

// The cache is read without a lock while a writer may be writing it: a
// reader gets a whole value cached for its generation or nothing, never
// fields of two values.
func TestNodeCachedIsNeverTorn(t *testing.T) {
	s := NewStore()
	s.Take(&Reservation{Runner: key("a"), RunnerUID: "a", Node: "n1", Size: contract.Amount{MilliCPU: 1000, Pods: 1}})
	n := s.Nodes([]string{"n1"}, nil)[0]
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); i <= 20000; i++ {
			// A value whose fields agree: i of everything, for generation i%2.
			s.WithNode("n1", func(n *NodeReservations) {
				n.Cache(i%2, Held{Amount: contract.Amount{MilliCPU: i, Memory: i, EphemeralStorage: i, Pods: i}})
			})
		}
	}()
	for {
		select {
		case <-done:
			// The last value written, whole.
			if h, ok := n.Cached(0); !ok || h.Amount.MilliCPU != 20000 || h.Amount.Pods != 20000 {
				t.Errorf("after the writes: %+v, %t; want 20000 of everything", h.Amount, ok)
			}
			return
		default:
		}
		for g := int64(0); g < 2; g++ {
			h, ok := n.Cached(g)
			if !ok {
				continue
			}
			a := h.Amount
			if a.MilliCPU != a.Memory || a.Memory != a.EphemeralStorage || a.EphemeralStorage != a.Pods || a.Pods%2 != g {
				t.Fatalf("generation %d: read %+v, fields of two values", g, a)
			}
		}
	}
}
