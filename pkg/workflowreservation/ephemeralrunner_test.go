package workflowreservation

import (
	"testing"

	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

// A job's workflow pod that exists but waits to be scheduled (kube-scheduler
// mode, a busy queue) still claims its reservation after the grace.
func TestGraceKeepsPendingWorkflowPod(t *testing.T) {
	logger := klogger(t)
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	wf := workflowPod("r1").NodeAffinityIn(v1.LabelHostname, []string{"n1"}, st.NodeSelectorTypeMatchExpressions).Obj()
	useListerOf(t, pl, wf)
	pl.store.Take(oneUnitReservation("r1"))
	feederOf(pl).ReleaseWithoutWorkflowPod(logger, key("r1"), "r1")
	cs := framework.NewCycleState()
	pl.PreFilter(context.Background(), cs, wf, nil)
	if s, _ := getCycleState(cs); s == nil || s.kind != kindWorkflow {
		t.Errorf("the pending workflow pod lost its reservation to the grace")
	}
}
