package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
)

type fixedClock struct{}

func (fixedClock) Now() time.Duration { return time.Minute }

func TestChecker(t *testing.T) {
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	// A runner bound to n1 holding 2 cpu for its workflow pod.
	runner := st.MakePod().Namespace("ns").Name("r1").UID("r1").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).
		Annotation(workflowreservation.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"2","pods":"1"},"source":"annotation","runnerUID":"r1"}`).Obj()
	other := func(q string) *v1.Pod {
		return st.MakePod().Namespace("ns").Name("other").UID("other").Node("n1").Req(cpu(q)).Phase(v1.PodRunning).Obj()
	}
	workflow := st.MakePod().Namespace("ns").Name("r1-workflow").UID("wf").Node("n1").Req(cpu("2")).
		Label("runner-pod", "r1").Phase(v1.PodRunning).Obj()

	at := func(sec int64) metav1.Time { return metav1.Unix(sec, 0) }
	// The same runner name, two incarnations: r1a failed, r1b is its
	// replacement on n1 with a reservation of 2 cpu; wf1a is the failed
	// incarnation's workflow pod, still running.
	reserved := func(uid string) string {
		return `{"node":"n1","requests":{"cpu":"2","pods":"1"},"source":"annotation","runnerUID":"` + uid + `"}`
	}
	r1a := st.MakePod().Namespace("ns").Name("r1").UID("r1a").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).CreationTimestamp(at(10)).
		Annotation(workflowreservation.ReservationAnnotation, reserved("r1a")).Obj()
	wf1a := st.MakePod().Namespace("ns").Name("r1-workflow").UID("wf1a").Node("n1").Req(cpu("2")).
		Label("runner-pod", "r1").Phase(v1.PodRunning).CreationTimestamp(at(20)).Obj()
	r1b := func(created int64) *v1.Pod {
		return st.MakePod().Namespace("ns").Name("r1").UID("r1b").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).CreationTimestamp(at(created)).
			Annotation(workflowreservation.ReservationAnnotation, reserved("r1b")).Obj()
	}
	wf1b := st.MakePod().Namespace("ns").Name("r1-workflow").UID("wf1b").Node("n1").Req(cpu("2")).
		Label("runner-pod", "r1").Phase(v1.PodRunning).CreationTimestamp(at(40)).Obj()
	// gone marks a delete event.
	gone := func(p *v1.Pod) *v1.Pod {
		p = p.DeepCopy()
		metav1.SetMetaDataLabel(&p.ObjectMeta, "deleted", "true")
		return p
	}

	tests := map[string]struct {
		pods             []*v1.Pod
		nodes            map[string]string // name -> cpu, default n1: 4
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
		"a failed incarnation's workflow pod does not claim the new incarnation's reservation": {
			// wf1a 2 + r1b 1 + r1b's reservation 2 + other 1.5 > 6.
			pods:             []*v1.Pod{r1a, wf1a, gone(r1a), r1b(30), other("1500m")},
			nodes:            map[string]string{"n1": "6"},
			wantViolations:   1,
			wantReservations: []string{"ns/r1"},
		},
		"same second: the watch order tells the incarnations apart": {
			pods:             []*v1.Pod{r1a, wf1a, gone(r1a), r1b(20), other("1500m")},
			nodes:            map[string]string{"n1": "6"},
			wantViolations:   1,
			wantReservations: []string{"ns/r1"},
		},
		"the new incarnation's own workflow pod claims its reservation": {
			pods:  []*v1.Pod{r1a, wf1a, gone(r1a), r1b(30), gone(wf1a), wf1b, other("1")},
			nodes: map[string]string{"n1": "6"},
		},
		"a node that went is not checked": {
			pods:  []*v1.Pod{runner},
			nodes: map[string]string{"n1": "4", "gone:n1": ""},
			// The reservation is still recorded on the live runner pod
			// until the pod garbage collector deletes it.
			wantReservations: []string{"ns/r1"},
		},
		"a record for another pod UID is flagged, and still counted": {
			pods: []*v1.Pod{st.MakePod().Namespace("ns").Name("r2").UID("r2").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).
				Annotation(workflowreservation.ReservationAnnotation, reserved("r1a")).Obj(), other("1")},
			wantViolations:   1,
			wantReservations: []string{"ns/r2"},
		},
		"a record without runnerUID is flagged": {
			pods: []*v1.Pod{st.MakePod().Namespace("ns").Name("r3").UID("r3").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).
				Annotation(workflowreservation.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"2"}}`).Obj(), other("1500m")},
			wantViolations:   2, // the record, and the overcommit it hides from tandem
			wantReservations: []string{"ns/r3"},
		},
		"terminal pods count for nothing": {
			pods:             []*v1.Pod{runner, st.MakePod().Namespace("ns").Name("done").UID("done").Node("n1").Req(cpu("4")).Phase(v1.PodSucceeded).Obj()},
			wantReservations: []string{"ns/r1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nodes := tc.nodes
			if nodes == nil {
				nodes = map[string]string{"n1": "4"}
			}
			c := New(fixedClock{}, nil, "runner-pod")
			for name, q := range nodes {
				if strings.HasPrefix(name, "gone:") {
					continue // removed after the pods
				}
				c.AddNode(name, st.MakeNode().Capacity(map[v1.ResourceName]string{v1.ResourceCPU: q, v1.ResourcePods: "10"}).Obj().Status.Allocatable)
			}
			for _, p := range tc.pods {
				if p.Labels["deleted"] == "true" {
					c.observe(p, true)
					continue
				}
				c.observe(p, false)
			}
			for name := range nodes {
				if node, ok := strings.CutPrefix(name, "gone:"); ok {
					c.RemoveNode(node)
					c.observe(other("4"), false) // a change on a node that is gone
				}
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
