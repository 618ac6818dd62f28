package invariant

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
)

type fixedClock struct{}

func (fixedClock) Now() time.Duration { return time.Minute }

func TestChecker(t *testing.T) {
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	// A runner bound to n1 holding 2 cpu for its workflow pod.
	runner := st.MakePod().Namespace("ns").Name("r1").UID("r1").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).
		Annotation(workflowreservation.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"2","pods":"1"},"source":"annotation"}`).Obj()
	other := func(q string) *v1.Pod {
		return st.MakePod().Namespace("ns").Name("other").UID("other").Node("n1").Req(cpu(q)).Phase(v1.PodRunning).Obj()
	}
	workflow := st.MakePod().Namespace("ns").Name("r1-workflow").UID("wf").Node("n1").Req(cpu("2")).
		Label("runner-pod", "r1").Phase(v1.PodRunning).Obj()

	tests := map[string]struct {
		pods             []*v1.Pod
		wantViolations   int
		wantReservations []string
	}{
		"runner + reservation + other fit": {
			pods:             []*v1.Pod{runner, other("1")},
			wantReservations: []string{"ns/r1"},
		},
		"other pod takes reserved room: violation": {
			pods:             []*v1.Pod{runner, other("1500m")},
			wantViolations:   1,
			wantReservations: []string{"ns/r1"},
		},
		"workflow pod on the node replaces the reservation": {
			pods: []*v1.Pod{runner, workflow, other("1")},
		},
		"terminal pods count for nothing": {
			pods:             []*v1.Pod{runner, st.MakePod().Namespace("ns").Name("done").UID("done").Node("n1").Req(cpu("4")).Phase(v1.PodSucceeded).Obj()},
			wantReservations: []string{"ns/r1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := New(fixedClock{}, map[string]v1.ResourceList{"n1": st.MakeNode().Capacity(map[v1.ResourceName]string{
				v1.ResourceCPU: "4", v1.ResourcePods: "10",
			}).Obj().Status.Allocatable}, "runner-pod")
			for _, p := range tc.pods {
				c.observe(p, false)
			}
			if got := len(c.Violations()); got != tc.wantViolations {
				t.Errorf("violations = %d (%v), want %d", got, c.Violations(), tc.wantViolations)
			}
			if diff := cmp.Diff(tc.wantReservations, c.Reservations()); diff != "" {
				t.Errorf("reservations (-want,+got):\n%s", diff)
			}
		})
	}
}
