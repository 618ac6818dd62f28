package reservations

import (
	"fmt"
	"runtime"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "arc", Name: name} }

func TestStore(t *testing.T) {
	cpu := func(name, node string, milli int64) *Reservation {
		return &Reservation{Runner: key(name), RunnerUID: types.UID(name), Node: node, Size: contract.Amount{MilliCPU: milli, Pods: 1}}
	}
	all := func(*Reservation) bool { return true }
	names := func(s *Store) []string {
		var out []string
		for _, r := range s.List() {
			out = append(out, r.Runner.Name+"@"+r.Node)
		}
		sort.Strings(out)
		return out
	}

	s := NewStore()
	s.Take(cpu("a", "n1", 100))
	s.Take(cpu("b", "n1", 200))
	s.Take(cpu("c", "n1", 400))
	s.Take(cpu("d", "n2", 800))
	if got := s.SumOn("n1", all).MilliCPU; got != 700 {
		t.Fatalf("n1 holds %dm, want 700m", got)
	}

	// Removing from the middle keeps the others.
	if _, ok := s.Release(key("b"), "b"); !ok {
		t.Fatal("remove(b) found nothing")
	}
	if got := s.SumOn("n1", all).MilliCPU; got != 500 {
		t.Errorf("n1 holds %dm after removing b, want 500m", got)
	}
	// A wrong UID removes nothing; a replacement moves the reservation.
	if _, ok := s.Release(key("a"), "other"); ok {
		t.Error("remove with another pod's UID removed a reservation")
	}
	s.Take(cpu("a", "n2", 100))
	if diff := cmp.Diff([]string{"a@n2", "c@n1", "d@n2"}, names(s)); diff != "" {
		t.Errorf("reservations (-want,+got):\n%s", diff)
	}
	if got := s.SumOn("n1", all).MilliCPU; got != 400 {
		t.Errorf("n1 holds %dm after a moved to n2, want 400m", got)
	}

	// A node going takes its reservations, and the tally follows.
	gone := s.ReleaseNode("n2")
	if len(gone) != 2 || !s.SumOn("n2", all).IsZero() {
		t.Errorf("ReleaseNode(n2) returned %d, n2 still holds %s", len(gone), s.SumOn("n2", all))
	}
	byPhase, held := s.Counts()
	if byPhase[PhaseHeld] != 1 || held.MilliCPU != 400 {
		t.Errorf("tally = %v, held %s; want 1 held of cpu=400m", byPhase, held)
	}
	if claimed, _ := s.Claim(key("c"), "c", "wf", "n1"); !claimed {
		t.Fatal("Claim of c's reservation refused")
	}
	if byPhase, held := s.Counts(); byPhase[PhaseClaimed] != 1 || byPhase[PhaseHeld] != 0 || !held.IsZero() {
		t.Errorf("after the claim: tally = %v, held %s; want 1 claimed, nothing held", byPhase, held)
	}
}

// Nodes come and go under an autoscaler: a node whose reservations are all
// gone leaves nothing behind in the store.
func TestStoreForgetsNodes(t *testing.T) {
	s := NewStore()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range 100000 {
		r := &Reservation{Runner: key("r"), RunnerUID: "r", Size: contract.Amount{MilliCPU: 1000, Pods: 1}}
		r.Node = fmt.Sprintf("karpenter-node-%06d", i)
		s.Take(r)
		if i%2 == 0 {
			s.Release(r.Runner, "")
		} else {
			s.ReleaseNode(r.Node)
		}
	}
	if !s.Empty() || len(s.byNode) != 0 {
		t.Fatalf("store not empty: %d reservations, %d nodes", len(s.byPod), len(s.byNode))
	}
	// A map entry kept per node, with its name, was 5.8 MB here.
	if grown := int64(heap()) - int64(before); grown > 2<<20 {
		t.Errorf("the heap grew by %d bytes over 100,000 nodes that came and went", grown)
	}
	runtime.KeepAlive(s)
}

func TestCachedOn(t *testing.T) {
	s := NewStore()
	if h, ok := s.CachedOn("n1", 7); !ok || !h.Amount.IsZero() || len(h.Ports) != 0 {
		t.Fatalf("a node without reservations: %+v, %t; want nothing held, known", h, ok)
	}
	r := &Reservation{Runner: key("a"), RunnerUID: "a", Node: "n1", Size: contract.Amount{MilliCPU: 1000, Pods: 1}}
	s.Take(r)
	if _, ok := s.CachedOn("n1", 7); ok {
		t.Fatal("a node whose reservations were never cached answered from the cache")
	}
	held := Held{Amount: contract.Amount{MilliCPU: 1000, Pods: 1}}
	s.WithNode("n1", func(n *NodeReservations) { n.Cache(7, held) })
	if h, ok := s.CachedOn("n1", 7); !ok || !cmp.Equal(h, held) {
		t.Fatalf("cached for generation 7: %+v, %t; want %+v", h, ok, held)
	}
	if _, ok := s.CachedOn("n1", 8); ok {
		t.Fatal("the node's pods changed (generation 8), the cache still answered")
	}
	s.Take(&Reservation{Runner: key("b"), RunnerUID: "b", Node: "n1", Size: contract.Amount{MilliCPU: 500, Pods: 1}})
	if _, ok := s.CachedOn("n1", 7); ok {
		t.Fatal("the node's reservations changed, the cache still answered")
	}
}
