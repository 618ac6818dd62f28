//go:build !tandem_k8s_1_34 && !tandem_k8s_ge_1_36

package workflowreservation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/klog/v2"
	schedulercache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// The node index rests on what kube-scheduler's cache does with its
// snapshot (the minor of go.mod; hack/test-versions.sh runs the index's
// other tests on every minor): one NodeInfo per node for as long as the
// node is in it, overwritten in place when the node's pods change, and a
// new node list only when a node comes or goes. Through the real cache:
// a pod assumed on a node changes what the index reads there, and a node
// added makes PreFilter index the new list.
func TestNodeIndexOnTheSchedulersSnapshot(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := klog.FromContext(ctx)
	schedulermetrics.Register() // the cache's gauges
	cache := schedulercache.New(ctx, time.Minute, nil)
	for i := range 3 {
		cache.AddNode(logger, st.MakeNode().Name(fmt.Sprintf("n%d", i)).Capacity(units("4")).Obj())
	}
	snapshot := schedulercache.NewEmptySnapshot()
	update := func() {
		t.Helper()
		if err := cache.UpdateSnapshot(logger, snapshot); err != nil {
			t.Fatal(err)
		}
	}
	update()
	nodes, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	n1, err := snapshot.NodeInfos().Get("n1")
	if err != nil {
		t.Fatal(err)
	}

	pl, _ := newTestPlugin(t, defaultArgs(), false)
	pl.store.Take(oneUnitReservation("r1")) // on n1
	if got := heldOn(t, pl, nodes, indexOf(t, nodes, "n1")); got.Amount.MilliCPU != 1000 {
		t.Fatalf("n1 holds %dm, want r1's 1000m", got.Amount.MilliCPU)
	}
	entry := pl.index.lookup(n1)

	// r1's workflow pod is assumed on n1: the same NodeInfo, the same list,
	// a new generation; the index reads the new pods.
	if err := cache.AssumePod(logger, workflowPod("r1").Req(units("1")).Node("n1").Obj()); err != nil {
		t.Fatal(err)
	}
	update()
	again, _ := snapshot.NodeInfos().List()
	if same, _ := snapshot.NodeInfos().Get("n1"); same != n1 || &again[0] != &nodes[0] {
		t.Fatal("the snapshot made a new NodeInfo for n1, or a new list, when a pod was assumed there: the index assumes it does neither")
	}
	if got := heldOn(t, pl, again, indexOf(t, again, "n1")); !got.Amount.IsZero() {
		t.Errorf("after r1's workflow pod was assumed on n1: %dm held, want nothing", got.Amount.MilliCPU)
	}
	if pl.index.lookup(n1) != entry {
		t.Error("the index was rebuilt for a list that did not change")
	}

	// A node comes: a new list, indexed anew at the next PreFilter.
	cache.AddNode(logger, st.MakeNode().Name("n3").Capacity(units("4")).Obj())
	update()
	grown, _ := snapshot.NodeInfos().List()
	if len(grown) != 4 {
		t.Fatalf("%d nodes in the snapshot, want 4", len(grown))
	}
	heldOn(t, pl, grown, 0)
	n3, _ := snapshot.NodeInfos().Get("n3")
	if pl.index.lookup(n3) == nil || !entry.Gone() {
		t.Errorf("after n3 came: n3 indexed %t, n1's old entry gone %t; want both", pl.index.lookup(n3) != nil, entry.Gone())
	}
}

func indexOf(t *testing.T, nodes []fwk.NodeInfo, name string) int {
	t.Helper()
	for i, ni := range nodes {
		if ni.Node().Name == name {
			return i
		}
	}
	t.Fatalf("no node %s", name)
	return -1
}
