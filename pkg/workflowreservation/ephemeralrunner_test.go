package workflowreservation

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

func ephemeralRunner(name string, status map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "actions.github.com/v1alpha1", "kind": "EphemeralRunner",
		"metadata": map[string]any{"namespace": "arc", "name": name},
		"status":   status,
	}}
}

// A job without a container creates no workflow pod: once the runner's
// EphemeralRunner shows a job and no workflow pod came within the grace,
// the reservation is used up. A job the EphemeralRunner showed before the
// reservation was taken, or a workflow pod that came in time, keeps it.
func TestJobWithoutContainerReleases(t *testing.T) {
	tests := map[string]struct {
		status      map[string]any
		staleJob    string
		claimed     bool
		wantRelease bool
	}{
		"job started, no workflow pod":           {status: map[string]any{"jobId": "j1"}, wantRelease: true},
		"job request id only":                    {status: map[string]any{"jobRequestId": int64(7)}, wantRelease: true},
		"no job yet":                             {status: map[string]any{"ready": true}},
		"the job an earlier runner of this name": {status: map[string]any{"jobId": "j0"}, staleJob: "j0"},
		"workflow pod came":                      {status: map[string]any{"jobId": "j1"}, claimed: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			args := defaultArgs()
			args.NoWorkflowPodGrace.Duration = 10 * time.Millisecond
			pl, _ := newTestPlugin(t, args, false)
			r := oneUnitReservation("r1")
			r.StaleJob = tc.staleJob
			if tc.claimed {
				r = claimedBy(r, "r1-workflow")
			}
			pl.store.Take(r)
			counter := metrics.Releases.WithLabelValues("test", metrics.ReleaseNoWorkflowPod, "false")
			before, _ := testutil.GetCounterMetricValue(counter)
			pl.feeder.OnEphemeralRunner(logger, ephemeralRunner("r1", tc.status), false)
			if tc.wantRelease {
				eventually(t, "the reservation is released and counted", func() bool {
					got, _ := pl.store.Get(key("r1"))
					after, _ := testutil.GetCounterMetricValue(counter)
					return got.NoWorkflowPod() && after-before == 1
				})
				got, _ := pl.store.Get(key("r1"))
				if held, _ := got.Holds(contract.RunnerPods{}); !held.IsZero() {
					t.Errorf("holds %s after the release, want nothing (no step headroom)", held)
				}
				return
			}
			got, _ := pl.store.Get(key("r1"))
			if !got.JobStarted().IsZero() || got.NoWorkflowPod() {
				t.Errorf("reservation %+v: grace started or released", got)
			}
		})
	}
}

// A job's workflow pod that exists but waits to be scheduled (kube-scheduler
// mode, a busy queue) still claims its reservation after the grace.
func TestGraceKeepsPendingWorkflowPod(t *testing.T) {
	logger := klogger(t)
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	wf := workflowPod("r1").NodeAffinityIn(v1.LabelHostname, []string{"n1"}, st.NodeSelectorTypeMatchExpressions).Obj()
	useListerOf(t, pl, wf)
	pl.store.Take(oneUnitReservation("r1"))
	pl.feeder.ReleaseWithoutWorkflowPod(logger, key("r1"), "r1")
	cs := framework.NewCycleState()
	pl.PreFilter(context.Background(), cs, wf, nil)
	if s, _ := getCycleState(cs); s == nil || s.kind != kindWorkflow {
		t.Errorf("the pending workflow pod lost its reservation to the grace")
	}
}

// A job without a container may still run container steps: the grace gives
// back the workflow room and keeps the step headroom.
func TestGraceKeepsStepHeadroom(t *testing.T) {
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	useListerOf(t, pl)
	pl.store.Take(withStep())
	pl.feeder.ReleaseWithoutWorkflowPod(klogger(t), key("r1"), "r1")
	r, _ := pl.store.Get(key("r1"))
	if got, _ := r.Holds(contract.RunnerPods{}); got.MilliCPU != 1000 || got.Pods != 1 {
		t.Errorf("holds cpu=%dm pods=%d after the grace, want the step headroom cpu=1000m pods=1", got.MilliCPU, got.Pods)
	}
}

// The job the EphemeralRunner showed when the reservation was taken is
// recorded, so that a standby or a new leader does not take it for this
// runner's job and release its room.
func TestStaleJobRecorded(t *testing.T) {
	r := oneUnitReservation("r1")
	r.StaleJob = "j0"
	value, err := reservations.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := reservations.FromPod(runnerPod("r1").Node("n1").Annotation(contract.ReservationAnnotation, value).Obj())
	if err != nil || back.StaleJob != "j0" {
		t.Fatalf("rebuilt %+v, %v; want staleJob j0", back, err)
	}
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	pl.store.Rebuild(back)
	pl.feeder.OnEphemeralRunner(klogger(t), &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "arc", "name": "r1"}, "status": map[string]any{"jobId": "j0"},
	}}, false)
	if got, _ := pl.store.Get(key("r1")); !got.JobStarted().IsZero() {
		t.Error("the earlier runner's job started the grace of the rebuilt reservation")
	}
}
