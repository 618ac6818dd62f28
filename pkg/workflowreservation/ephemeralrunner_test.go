package workflowreservation

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/tandem-scheduler/tandem/pkg/reservations"
	"github.com/tandem-scheduler/tandem/pkg/workflowreservation/metrics"
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
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			pl.noWorkflowPodGrace = 10 * time.Millisecond
			r := oneUnitReservation("r1")
			r.StaleJob = tc.staleJob
			if tc.claimed {
				r = claimedBy(r, "r1-workflow")
			}
			pl.store.Take(r)
			counter := metrics.Releases.WithLabelValues("test", metrics.ReleaseNoWorkflowPod, "false")
			before, _ := testutil.GetCounterMetricValue(counter)
			pl.onEphemeralRunner(logger, ephemeralRunner("r1", tc.status))
			if tc.wantRelease {
				eventually(t, "the reservation is released and counted", func() bool {
					got, _ := pl.store.Get(key("r1"))
					after, _ := testutil.GetCounterMetricValue(counter)
					return got.NoWorkflowPod() && after-before == 1
				})
				got, _ := pl.store.Get(key("r1"))
				if held, _ := got.Holds(reservations.RunnerPods{}); !held.IsZero() {
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
