package kubectltandem

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

// quantities compares quantities by value ("1000m" is "1") and treats an
// empty list as a missing one.
var quantities = cmp.Options{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmpopts.EquateEmpty(),
}

// The hold rule (contract.Holding), fed from the API's view.
func TestHolds(t *testing.T) {
	// 2 cpu reserved: 1500m for the workflow pod, 500m (and a pod) of step
	// headroom.
	rec := contract.Recorded{Node: "n1", Requests: rl("cpu=2,memory=3Gi,pods=2"), StepRequests: rl("cpu=500m,memory=1Gi,pods=1"), Source: "annotation", HostPorts: []string{"6379/TCP"}}
	runner := makePod("arc", "r1").runner().node("n1").obj()
	job := makeJob("arc", "r1-step", "r1")
	testCases := map[string]struct {
		rec  contract.Recorded
		pods []*v1.Pod
		jobs []*batchv1.Job
		want usage
	}{
		"no workflow pod yet: all of it, with its ports": {
			rec:  rec,
			want: usage{phase: PhaseHeld, holds: rl("cpu=2,memory=3Gi,pods=2"), ports: []string{"6379/TCP"}},
		},
		"a workflow pod not bound yet holds nothing of it": {
			rec:  rec,
			pods: []*v1.Pod{makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1500m")).obj()},
			want: usage{phase: PhaseHeld, holds: rl("cpu=2,memory=3Gi,pods=2"), ports: []string{"6379/TCP"}, workflowPod: "r1-workflow"},
		},
		"a step Job's pod before the workflow pod uses part of it": {
			rec:  rec,
			pods: []*v1.Pod{makePod("arc", "r1-step-pod").ownedByJob(job).req(rl("cpu=500m")).node("n1").obj()},
			jobs: []*batchv1.Job{job},
			want: usage{phase: PhaseHeld, holds: rl("cpu=1500m,memory=3Gi,pods=1"), ports: []string{"6379/TCP"}},
		},
		"workflow pod on the node: the step headroom stays": {
			rec:  rec,
			pods: []*v1.Pod{makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1500m,memory=2Gi")).node("n1").obj()},
			want: usage{phase: PhaseClaimed, holds: rl("cpu=500m,memory=1Gi,pods=1"), workflowPod: "r1-workflow"},
		},
		"workflow pod bigger than its part takes from the headroom": {
			rec:  rec,
			pods: []*v1.Pod{makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1800m,memory=2Gi")).node("n1").obj()},
			want: usage{phase: PhaseClaimed, holds: rl("cpu=200m,memory=1Gi,pods=1"), workflowPod: "r1-workflow"},
		},
		"step pods use the headroom: labelled (hooks v0.8) and through a Job (v0.7.0)": {
			rec: rec,
			pods: []*v1.Pod{
				makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1500m,memory=2Gi")).node("n1").obj(),
				makePod("arc", "r1-step-a").workflowOf("r1").req(rl("cpu=200m")).created(time.Second).node("n1").obj(),
				makePod("arc", "r1-step-b").ownedByJob(job).req(rl("cpu=200m,memory=2Gi")).created(time.Second).node("n1").obj(),
			},
			jobs: []*batchv1.Job{job},
			want: usage{phase: PhaseClaimed, holds: rl("cpu=100m"), workflowPod: "r1-workflow"},
		},
		"finished step pods use nothing": {
			rec: rec,
			pods: []*v1.Pod{
				makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1500m,memory=2Gi")).node("n1").obj(),
				makePod("arc", "r1-step-a").workflowOf("r1").req(rl("cpu=200m")).created(time.Second).node("n1").phase(v1.PodSucceeded).obj(),
			},
			want: usage{phase: PhaseClaimed, holds: rl("cpu=500m,memory=1Gi,pods=1"), workflowPod: "r1-workflow"},
		},
		"workflow pod finished: nothing": {
			rec:  rec,
			pods: []*v1.Pod{makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1500m")).node("n1").phase(v1.PodSucceeded).obj()},
			want: usage{phase: PhaseFinished, holds: rl(""), workflowPod: "r1-workflow"},
		},
		// Issue 20: it used the reservation up; it claims nothing.
		"a pod of the runner on another node claims nothing: all held": {
			rec:  rec,
			pods: []*v1.Pod{makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1500m")).node("n2").obj()},
			want: usage{phase: PhaseHeld, holds: rl("cpu=2,memory=3Gi,pods=2"), ports: []string{"6379/TCP"}},
		},
		"an earlier runner's workflow pod, older than the runner, claims nothing": {
			rec:  rec,
			pods: []*v1.Pod{makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1500m")).created(-time.Minute).node("n1").obj()},
			want: usage{phase: PhaseHeld, holds: rl("cpu=2,memory=3Gi,pods=2"), ports: []string{"6379/TCP"}},
		},
		"an earlier runner's workflow pod recorded as stale claims nothing": {
			rec: func() contract.Recorded {
				r := rec
				r.StaleWorkflowPods = []types.UID{"r1-workflow-uid"}
				return r
			}(),
			pods: []*v1.Pod{makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1500m")).node("n1").obj()},
			want: usage{phase: PhaseHeld, holds: rl("cpu=2,memory=3Gi,pods=2"), ports: []string{"6379/TCP"}},
		},
		"without step headroom the claim leaves nothing": {
			rec:  contract.Recorded{Node: "n1", Requests: rl("cpu=1500m,pods=1")},
			pods: []*v1.Pod{makePod("arc", "r1-workflow").workflowOf("r1").req(rl("cpu=1")).node("n1").obj()},
			want: usage{phase: PhaseClaimed, holds: rl(""), workflowPod: "r1-workflow"},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			s := snapshot(nil, append([]*v1.Pod{runner}, tc.pods...), tc.jobs)
			got := holds(tc.rec, runner, s.runnerPods(types.NamespacedName{Namespace: "arc", Name: "r1"}))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(usage{}), quantities); diff != "" {
				t.Errorf("holds (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestAnnotationSource(t *testing.T) {
	rec := contract.Recorded{Node: "n1", Requests: rl("cpu=1,pods=1"), Source: "hook-template"}
	since := t0.Add(time.Minute)
	testCases := map[string]struct {
		pods []*v1.Pod
		want []Reservation
	}{
		"a runner with a record": {
			pods: []*v1.Pod{makePod("arc", "r1").runner().node("n1").record(rec).obj()},
			want: []Reservation{{Namespace: "arc", Runner: "r1", RunnerUID: "r1-uid", Node: "n1", Requests: rl("cpu=1,pods=1"), Source: "hook-template", Phase: PhaseHeld, Holds: rl("cpu=1,pods=1"), Since: since}},
		},
		"pods without a record and finished runners are not listed": {
			pods: []*v1.Pod{
				makePod("arc", "r1").runner().node("n1").obj(),
				makePod("arc", "r2").runner().node("n1").record(rec).phase(v1.PodSucceeded).obj(),
			},
		},
		"a record copied from another pod holds nothing": {
			pods: []*v1.Pod{makePod("arc", "r1").runner().node("n1").record(contract.Recorded{Node: "n1", Requests: rl("cpu=1"), RunnerUID: "other"}).obj()},
			want: []Reservation{{Namespace: "arc", Runner: "r1", RunnerUID: "other", Node: "n1", Requests: rl("cpu=1"), Phase: PhaseInvalid,
				Invalid: `recorded for pod UID "other", not this pod (r1-uid)`, Resized: true, Since: since}},
		},
		"a record on a pod of another scheduler holds nothing, and tandem sizes nothing for it": {
			pods: []*v1.Pod{makePod("arc", "r1").runner().scheduler("default-scheduler").node("n1").record(rec).obj()},
			want: []Reservation{{Namespace: "arc", Runner: "r1", RunnerUID: "r1-uid", Node: "n1", Requests: rl("cpu=1,pods=1"), Source: "hook-template", Phase: PhaseInvalid,
				Invalid: `the pod's scheduler "default-scheduler" is not tandem (--scheduler-name)`, Since: since}},
		},
		"an unreadable record": {
			pods: []*v1.Pod{makePod("arc", "r1").runner().node("n1").annotate(contract.ReservationAnnotation, "{").obj()},
			want: []Reservation{{Namespace: "arc", Runner: "r1", Phase: PhaseInvalid,
				Invalid: "unreadable: annotation tandem.dev/reservation: unexpected end of JSON input", Resized: true, Since: since}},
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			got := AnnotationSource{}.Reservations(snapshot(nil, tc.pods, nil))
			if diff := cmp.Diff(tc.want, got, quantities); diff != "" {
				t.Errorf("Reservations (-want,+got):\n%s", diff)
			}
		})
	}
}

// Found in review: since the hold rule is the contract's (amounts in bytes
// and millicores), a record of memory=4G showed as memory=4000000000. What a
// reservation holds is written in the units of its record.
func TestHoldsInTheRecordsUnits(t *testing.T) {
	rec := contract.Recorded{Node: "n1", Requests: rl("cpu=2,memory=4G,pods=1"), Source: "annotation"}
	runner := makePod("arc", "r1").runner().node("n1").obj()
	s := snapshot(nil, []*v1.Pod{runner}, nil)
	got := holds(rec, runner, s.runnerPods(types.NamespacedName{Namespace: "arc", Name: "r1"}))
	if shown := format(got.holds); shown != "cpu=2,memory=4G,pods=1" {
		t.Errorf("holds %s, want cpu=2,memory=4G,pods=1", shown)
	}
}
