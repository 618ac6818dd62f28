package workflowreservation

import (
	"fmt"
	"runtime"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestStore(t *testing.T) {
	cpu := func(name, node string, milli int64) *reservation {
		return &reservation{runner: key(name), runnerUID: types.UID(name), node: node, size: amount{MilliCPU: milli, Pods: 1}}
	}
	all := func(*reservation) bool { return true }
	names := func(s *store) []string {
		var out []string
		for _, r := range s.list() {
			out = append(out, r.runner.Name+"@"+r.node)
		}
		sort.Strings(out)
		return out
	}

	s := newStore()
	s.put(cpu("a", "n1", 100))
	s.put(cpu("b", "n1", 200))
	s.put(cpu("c", "n1", 400))
	s.put(cpu("d", "n2", 800))
	if got := s.sumOn("n1", all).MilliCPU; got != 700 {
		t.Fatalf("n1 holds %dm, want 700m", got)
	}

	// Removing from the middle keeps the others.
	if r := s.remove(key("b"), "b"); r == nil {
		t.Fatal("remove(b) found nothing")
	}
	if got := s.sumOn("n1", all).MilliCPU; got != 500 {
		t.Errorf("n1 holds %dm after removing b, want 500m", got)
	}
	// A wrong UID removes nothing; a replacement moves the reservation.
	if r := s.remove(key("a"), "other"); r != nil {
		t.Error("remove with another pod's UID removed a reservation")
	}
	s.put(cpu("a", "n2", 100))
	if diff := cmp.Diff([]string{"a@n2", "c@n1", "d@n2"}, names(s)); diff != "" {
		t.Errorf("reservations (-want,+got):\n%s", diff)
	}
	if got := s.sumOn("n1", all).MilliCPU; got != 400 {
		t.Errorf("n1 holds %dm after a moved to n2, want 400m", got)
	}

	// A node going takes its reservations, and the tally follows.
	gone := s.removeNode("n2")
	if len(gone) != 2 || !s.sumOn("n2", all).isZero() {
		t.Errorf("removeNode(n2) returned %d, n2 still holds %s", len(gone), s.sumOn("n2", all))
	}
	byPhase, held := s.counts()
	if byPhase[phaseHeld] != 1 || held.MilliCPU != 400 {
		t.Errorf("tally = %v, held %s; want 1 held of cpu=400m", byPhase, held)
	}
	s.update(key("c"), func(r *reservation) bool { r.claimedBy = "wf"; return true })
	if byPhase, held := s.counts(); byPhase[phaseClaimed] != 1 || byPhase[phaseHeld] != 0 || !held.isZero() {
		t.Errorf("after the claim: tally = %v, held %s; want 1 claimed, nothing held", byPhase, held)
	}
}

// Nodes come and go under an autoscaler: a node whose reservations are all
// gone leaves nothing behind in the store.
func TestStoreForgetsNodes(t *testing.T) {
	s := newStore()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range 100000 {
		r := oneUnitReservation("r")
		r.node = fmt.Sprintf("karpenter-node-%06d", i)
		s.put(r)
		if i%2 == 0 {
			s.remove(r.runner, "")
		} else {
			s.removeNode(r.node)
		}
	}
	if !s.empty() || len(s.byNode) != 0 {
		t.Fatalf("store not empty: %d reservations, %d nodes", len(s.byPod), len(s.byNode))
	}
	// A map entry kept per node, with its name, was 5.8 MB here.
	if grown := int64(heap()) - int64(before); grown > 2<<20 {
		t.Errorf("the heap grew by %d bytes over 100,000 nodes that came and went", grown)
	}
	runtime.KeepAlive(s)
}
