package workflowreservation

import (
	"context"
	"testing"

	"k8s.io/component-base/metrics/testutil"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
)

func TestMetrics(t *testing.T) {
	ctx := context.Background()
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	value := func(labels ...string) float64 {
		t.Helper()
		v, err := testutil.GetGaugeMetricValue(metrics.Reservations.WithLabelValues(append([]string{"test"}, labels...)...))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	reservedCPU := func() float64 {
		t.Helper()
		v, err := testutil.GetGaugeMetricValue(metrics.ReservedResources.WithLabelValues("test", "cpu"))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	runner := runnerPod("m1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1500m").Obj()
	cs := framework.NewCycleState()
	pl.PreFilter(ctx, cs, runner, nil)
	pl.Reserve(ctx, cs, runner, "n1")
	if held, cpu := value("held"), reservedCPU(); held != 1 || cpu != 1.5 {
		t.Errorf("after Reserve: held = %v, reserved cpu = %v; want 1 and 1.5", held, cpu)
	}

	wf := workflowPod("m1").Obj()
	wcs := framework.NewCycleState()
	pl.PreFilter(ctx, wcs, wf, nil)
	pl.Reserve(ctx, wcs, wf, "n1")
	if held, claimed, cpu := value("held"), value("claimed"), reservedCPU(); held != 0 || claimed != 1 || cpu != 0 {
		t.Errorf("after the claim: held = %v, claimed = %v, reserved cpu = %v; want 0, 1, 0", held, claimed, cpu)
	}
	before, err := testutil.GetHistogramMetricCount(metrics.ClaimDuration.WithLabelValues("test"))
	if err != nil {
		t.Fatal(err)
	}
	pl.PostBind(ctx, wcs, wf, "n1")
	after, err := testutil.GetHistogramMetricCount(metrics.ClaimDuration.WithLabelValues("test"))
	if err != nil {
		t.Fatal(err)
	}
	if after != before+1 {
		t.Errorf("claim durations observed = %d, want %d", after, before+1)
	}

	pl.Unreserve(ctx, cs, runner, "n1")
	if n := value("held") + value("claimed"); n != 0 {
		t.Errorf("after Unreserve: %v reservations counted, want 0", n)
	}
	released, err := testutil.GetCounterMetricValue(metrics.Releases.WithLabelValues("test", metrics.ReleaseUnreserved, "false"))
	if err != nil || released < 1 {
		t.Errorf("unreserved releases = %v (%v), want >= 1", released, err)
	}
}
