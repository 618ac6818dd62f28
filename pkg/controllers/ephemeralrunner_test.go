package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// withStatus gives the EphemeralRunner er the status.
func withStatus(er *unstructured.Unstructured, status map[string]any) *unstructured.Unstructured {
	er.Object["status"] = status
	return er
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
			f, _ := newTestFeeder(t, withGrace(10*time.Millisecond))
			r := oneUnitReservation("r1")
			r.StaleJob = tc.staleJob
			f.store.Take(r)
			if tc.claimed {
				f.store.Claim(r.Runner, r.RunnerUID, "r1-workflow", r.Node)
			}
			counter := metrics.Releases.WithLabelValues("test", metrics.ReleaseNoWorkflowPod, "false")
			before, _ := testutil.GetCounterMetricValue(counter)
			f.onEphemeralRunner(logger, withStatus(ephemeralRunner("r1", ""), tc.status), false)
			if tc.wantRelease {
				eventually(t, "the reservation is released and counted", func() bool {
					got, _ := f.store.Get(key("r1"))
					after, _ := testutil.GetCounterMetricValue(counter)
					return got.NoWorkflowPod() && after-before == 1
				})
				got, _ := f.store.Get(key("r1"))
				if held, _ := got.Holds(contract.RunnerPods{}); !held.IsZero() {
					t.Errorf("holds %s after the release, want nothing (no step headroom)", held)
				}
				return
			}
			got, _ := f.store.Get(key("r1"))
			if !got.JobStarted().IsZero() || got.NoWorkflowPod() {
				t.Errorf("reservation %+v: grace started or released", got)
			}
		})
	}
}

// A job without a container may still run container steps: the grace gives
// back the workflow room and keeps the step headroom.
func TestGraceKeepsStepHeadroom(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	f, _ := newTestFeeder(t)
	f.UsePods(corelisters.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})))
	r := oneUnitReservation("r1")
	r.Size, r.Step = contract.Amount{MilliCPU: 3000, Pods: 2}, contract.Amount{MilliCPU: 1000, Pods: 1}
	f.store.Take(r)
	f.ReleaseWithoutWorkflowPod(logger, key("r1"), "r1")
	got, _ := f.store.Get(key("r1"))
	if held, _ := got.Holds(contract.RunnerPods{}); held.MilliCPU != 1000 || held.Pods != 1 {
		t.Errorf("holds cpu=%dm pods=%d after the grace, want the step headroom cpu=1000m pods=1", held.MilliCPU, held.Pods)
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
	logger, _ := ktesting.NewTestContext(t)
	f, _ := newTestFeeder(t)
	f.store.Rebuild(back)
	f.onEphemeralRunner(logger, &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "arc", "name": "r1"}, "status": map[string]any{"jobId": "j0"},
	}}, false)
	if got, _ := f.store.Get(key("r1")); !got.JobStarted().IsZero() {
		t.Error("the earlier runner's job started the grace of the rebuilt reservation")
	}
}
