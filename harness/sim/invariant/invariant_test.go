package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
)

type fixedClock struct{}

func (fixedClock) Now() time.Duration { return time.Minute }

func TestChecker(t *testing.T) {
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	// A runner bound to n1 holding 2 cpu for its workflow pod.
	runner := st.MakePod().Namespace("ns").Name("r1").UID("r1").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).
		Annotation(contract.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"2","pods":"1"},"source":"annotation","runnerUID":"r1"}`).Obj()
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
		Annotation(contract.ReservationAnnotation, reserved("r1a")).Obj()
	wf1a := st.MakePod().Namespace("ns").Name("r1-workflow").UID("wf1a").Node("n1").Req(cpu("2")).
		Label("runner-pod", "r1").Phase(v1.PodRunning).CreationTimestamp(at(20)).Obj()
	r1b := func(created int64) *v1.Pod {
		return st.MakePod().Namespace("ns").Name("r1").UID("r1b").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).CreationTimestamp(at(created)).
			Annotation(contract.ReservationAnnotation, reserved("r1b")).Obj()
	}
	wf1b := st.MakePod().Namespace("ns").Name("r1-workflow").UID("wf1b").Node("n1").Req(cpu("2")).
		Label("runner-pod", "r1").Phase(v1.PodRunning).CreationTimestamp(at(40)).Obj()
	// r1's placeholder (reservationMode: Pods): 2 cpu, what r1 holds.
	hold := st.MakePod().Namespace("ns").Name("r1-hold").UID("hold").Node("n1").Req(cpu("2")).Phase(v1.PodRunning).
		Label(contract.PlaceholderLabel, "true").Annotation(contract.PlaceholderOfAnnotation, "r1").Obj()
	hold.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "r1", UID: "r1", Controller: ptr.To(true)}}
	labelledHold := hold.DeepCopy()
	labelledHold.Labels["runner-pod"] = "r1"
	pairPod := st.MakePod().Namespace("ns").Name("r2-pair").UID("pair").Req(cpu("3")).
		Label(contract.PairPodLabel, "true").Annotation(contract.PairOfAnnotation, "r2").Obj()
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
				Annotation(contract.ReservationAnnotation, reserved("r1a")).Obj(), other("1")},
			wantViolations:   1,
			wantReservations: []string{"ns/r2"},
		},
		"a record without runnerUID is flagged": {
			pods: []*v1.Pod{st.MakePod().Namespace("ns").Name("r3").UID("r3").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).
				Annotation(contract.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"2"}}`).Obj(), other("1500m")},
			wantViolations:   2, // the record, and the overcommit it hides from tandem
			wantReservations: []string{"ns/r3"},
		},
		"a placeholder holds its runner's reservation: counted once": {
			// runner 1 + reservation 2 (the placeholder's 2) + other 1 = 4.
			pods:             []*v1.Pod{runner, hold, other("1")},
			wantReservations: []string{"ns/r1", "ns/r1-hold"},
		},
		"another pod in the room a placeholder holds: violation": {
			pods:             []*v1.Pod{runner, hold, other("1500m")},
			wantViolations:   1,
			wantReservations: []string{"ns/r1", "ns/r1-hold"},
		},
		"the workflow pod comes, the placeholder goes: the workflow pod counts": {
			pods: []*v1.Pod{runner, hold, gone(hold), workflow, other("1")},
		},
		"a placeholder and the workflow pod at once: violation": {
			// runner 1 + workflow pod 2 + the placeholder's 2 > 4.
			pods:             []*v1.Pod{runner, hold, workflow},
			wantViolations:   1,
			wantReservations: []string{"ns/r1-hold"},
		},
		"a placeholder whose runner is gone is an ordinary pod, and left over": {
			pods:             []*v1.Pod{hold, other("2500m")},
			wantViolations:   1,
			wantReservations: []string{"ns/r1-hold"},
		},
		"a placeholder labelled runner-pod is not the workflow pod": {
			pods:             []*v1.Pod{runner, labelledHold, other("1")},
			wantReservations: []string{"ns/r1", "ns/r1-hold"},
		},
		"a pending pair pod counts for nothing and is left over": {
			pods:             []*v1.Pod{runner, pairPod, other("1")},
			wantReservations: []string{"ns/r1", "ns/r2-pair"},
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

// Container steps, services' hosts ports aside, and jobs without a
// container: what the checker counts as held follows the plugin's rule.
func TestCheckerJobShapes(t *testing.T) {
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	at := func(sec int64) metav1.Time { return metav1.Unix(sec, 0) }
	// r1 on n1 (6 cpu): runner 1, workflow pod 2, step headroom 1.
	runner := st.MakePod().Namespace("ns").Name("r1").UID("r1").Node("n1").Req(cpu("1")).Phase(v1.PodRunning).CreationTimestamp(at(10)).
		Annotation(contract.ReservationAnnotation, `{"node":"n1","requests":{"cpu":"3","pods":"2"},"stepRequests":{"cpu":"1","pods":"1"},"source":"hook-template","runnerUID":"r1"}`).Obj()
	// The same runner, recorded when its EphemeralRunner showed job 6.
	staleRunner := runner.DeepCopy()
	staleRunner.Annotations[contract.ReservationAnnotation] = `{"node":"n1","requests":{"cpu":"3","pods":"2"},"stepRequests":{"cpu":"1","pods":"1"},"source":"hook-template","staleJob":"6","runnerUID":"r1"}`
	workflow := func(node string) *v1.Pod {
		return st.MakePod().Namespace("ns").Name("r1-workflow").UID("wf").Node(node).Req(cpu("2")).
			Label("runner-pod", "r1").Phase(v1.PodRunning).CreationTimestamp(at(20)).Obj()
	}
	finished := func(p *v1.Pod) *v1.Pod {
		p = p.DeepCopy()
		p.Status.Phase = v1.PodSucceeded
		return p
	}
	other := func(q string) *v1.Pod {
		return st.MakePod().Namespace("ns").Name("other").UID("other").Node("n1").Req(cpu(q)).Phase(v1.PodRunning).CreationTimestamp(at(30)).Obj()
	}
	// A step pod of hooks v0.8: labelled with the runner.
	barePod := st.MakePod().Namespace("ns").Name("r1-step-0a1b2c3d").UID("step8").Node("n1").Req(cpu("1")).
		Label("runner-pod", "r1").Phase(v1.PodRunning).CreationTimestamp(at(25)).Obj()
	// A step Job of hooks v0.7.0 and its pod.
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1-step-11111111", UID: "job", Labels: map[string]string{"runner-pod": "r1"}}}
	jobPod := st.MakePod().Namespace("ns").Name("r1-step-11111111-x2z4q").UID("step7").Node("n1").Req(cpu("1")).
		OwnerReference("r1-step-11111111", batchv1.SchemeGroupVersion.WithKind("Job")).Phase(v1.PodRunning).CreationTimestamp(at(25)).Obj()
	jobPod.OwnerReferences[0].UID = "job"
	jobPod.OwnerReferences[0].Controller = ptr.To(true)
	ephemeralRunner := func(jobID string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "ns", "name": "r1"}}}
		if jobID != "" {
			_ = unstructured.SetNestedField(u.Object, jobID, "status", "jobId")
		}
		return u
	}
	gone := func(p *v1.Pod) *v1.Pod {
		p = p.DeepCopy()
		metav1.SetMetaDataLabel(&p.ObjectMeta, "deleted", "true")
		return p
	}

	tests := map[string]struct {
		events           []any
		wantViolations   int
		wantReservations []string
		wantReservedCPU  int64 // millicores held on n1 at the end
	}{
		"step headroom stays held after the claim": {
			// runner 1 + workflow 2 + headroom 1 + other 2.5 > 6.
			events:           []any{runner, workflow("n1"), other("2500m")},
			wantViolations:   1,
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  1000,
		},
		"room beside the headroom is free": {
			events:           []any{runner, workflow("n1"), other("2")},
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  1000,
		},
		"a bare step pod (hooks v0.8) uses the headroom": {
			events:          []any{runner, workflow("n1"), barePod, other("2")},
			wantReservedCPU: 0,
		},
		"a step Job's pod (hooks v0.7.0) uses the headroom": {
			events: []any{runner, workflow("n1"), job, jobPod, other("2")},
		},
		"a Job's pod seen before its Job counts once the Job is seen": {
			events: []any{runner, workflow("n1"), jobPod, other("2"), job},
		},
		"a bare step pod is not the runner's workflow pod": {
			// The workflow pod claimed first; the step pod on its own would
			// have looked like one, and the headroom like free room.
			events:           []any{runner, workflow("n1"), finished(barePod), other("2500m")},
			wantViolations:   1,
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  1000,
		},
		"the workflow pod gone: nothing held": {
			events: []any{runner, workflow("n1"), gone(workflow("n1")), other("5")},
		},
		"the workflow pod ended: nothing held": {
			events: []any{runner, workflow("n1"), finished(workflow("n1")), other("5")},
		},
		// Issue 20: a pod labelled with the runner's name on another node
		// used the reservation up; it claims nothing, all of it stays held.
		"a pod of the runner on another node claims nothing: all held": {
			events:           []any{runner, workflow("n2"), other("2")},
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  3000,
		},
		"job without a container: released after the grace, the step headroom kept": {
			// runner 1 + headroom 1 + other 4 = 6.
			events:           []any{ephemeralRunner(""), runner, ephemeralRunner("7"), other("4")},
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  1000,
		},
		"job without a container: the step headroom stays held after the release": {
			events:           []any{runner, ephemeralRunner("7"), other("4500m")},
			wantViolations:   1,
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  1000,
		},
		"job without a container: a step Job's pod after the release uses the headroom": {
			events:          []any{runner, ephemeralRunner("7"), job, jobPod, other("4")},
			wantReservedCPU: 0,
		},
		"job shown before the reservation record is seen: the grace starts with the record": {
			events:           []any{ephemeralRunner("7"), runner, other("4")},
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  1000,
		},
		"a workflow pod waiting to be scheduled at the end of the grace keeps it": {
			events:           []any{runner, workflow(""), ephemeralRunner("7"), other("2500m")},
			wantViolations:   1,
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  3000,
		},
		"job without a container, before the grace: all held": {
			events:           []any{runner, other("2500m")},
			wantViolations:   1,
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  3000,
		},
		"the job the EphemeralRunner showed before the reservation starts no grace": {
			// A runner recreated under its name: its EphemeralRunner still
			// shows the failed incarnation's job.
			events:           []any{ephemeralRunner("6"), staleRunner, ephemeralRunner("6"), other("2500m")},
			wantViolations:   1,
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  3000,
		},
		"a workflow pod that claimed before the job showed is not released": {
			events:           []any{runner, workflow("n1"), ephemeralRunner("7"), other("2")},
			wantReservations: []string{"ns/r1"},
			wantReservedCPU:  1000,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := New(fixedClock{}, nil, "runner-pod")
			// The grace ends right after the event that started it.
			var due []func()
			c.afterFunc = func(d time.Duration, f func()) {
				if d <= 0 || d >= time.Second {
					t.Errorf("grace timer of %s, want less than the plugin's 1s and more than 0", d)
				}
				due = append(due, f)
			}
			c.grace = time.Second
			for _, n := range []string{"n1", "n2"} {
				c.AddNode(n, st.MakeNode().Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "6", v1.ResourcePods: "10"}).Obj().Status.Allocatable)
			}
			for _, ev := range tc.events {
				switch o := ev.(type) {
				case *v1.Pod:
					if o.Labels["deleted"] == "true" {
						c.observe(o, true)
					} else {
						c.observe(o, false)
					}
				case *batchv1.Job:
					c.observeJob(o)
				case *unstructured.Unstructured:
					c.observeEphemeralRunner(o)
				}
				for _, f := range due {
					f()
				}
				due = nil
			}
			if got := len(c.Violations()); got != tc.wantViolations {
				t.Errorf("violations = %d (%v), want %d", got, c.Violations(), tc.wantViolations)
			}
			if diff := cmp.Diff(tc.wantReservations, c.Reservations()); diff != "" {
				t.Errorf("reservations (-want,+got):\n%s", diff)
			}
			samples := c.Samples()["n1"]
			if got := samples[len(samples)-1].ReservedMilli; got != tc.wantReservedCPU {
				t.Errorf("reserved cpu on n1 = %dm, want %dm", got, tc.wantReservedCPU)
			}
		})
	}
}
