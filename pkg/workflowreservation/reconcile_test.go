package workflowreservation

import (
	"context"
	"testing"

	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Room the reconciler frees is announced by no cluster event: it activates
// the pods turned away.
func TestReconcileReleaseActivates(t *testing.T) {
	ctx := context.Background()
	pl, h := newTestPlugin(t, defaultArgs(), true)
	pl.store.Take(oneUnitReservation("ghost"))
	p := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("3")).Obj()
	cs := framework.NewCycleState()
	pl.PreFilter(ctx, cs, p, nil)
	if pl.Filter(ctx, cs, p, nodeInfo(threeUnits)).IsSuccess() {
		t.Fatal("Filter let the pod take reserved room")
	}
	pl.PostFilter(ctx, cs, p, nil)
	feederOf(pl).Reconcile(ctx)
	// Once its backoff (1 s) is over.
	eventually(t, "the pod is activated after the reconciler released the ghost's room", func() bool {
		got := h.activatedPods()
		return len(got) == 1 && got[0] == "arc/p"
	})
}
