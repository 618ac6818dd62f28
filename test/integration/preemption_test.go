package integration

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/contract"
)

// priorityClasses creates the low and high priority classes the
// preemption tests use, unless they exist.
func (e *env) priorityClasses() {
	e.t.Helper()
	for name, value := range map[string]int32{"tandem-test-low": 0, "tandem-test-high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := e.client.SchedulingV1().PriorityClasses().Create(e.ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			e.t.Fatal(err)
		}
	}
}

// withPriority sets the pod's priority class and lets it go at once when
// preempted (there is no kubelet to end it gracefully).
func withPriority(class string) func(*v1.Pod) {
	return func(pod *v1.Pod) {
		zero := int64(0)
		pod.Spec.PriorityClassName = class
		pod.Spec.TerminationGracePeriodSeconds = &zero
	}
}

// A reservation has its runner's priority. An idle warm runner of low
// priority (minRunners) is a preemption victim like any pod, and its
// reservation goes with it: the higher-priority pod gets the runner's room
// and its workflow room. Before PreFilterExtensions, the dry run removed the
// runner but kept counting its reservation, found no victims that would
// help, and the pod waited for as long as the runner idled.
func TestPreemptionEvictsIdleRunnerWithItsReservation(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"pe-n1": "4"})
	e.priorityClasses()
	e.create("warm", podSpec{cpu: "1", runner: true, mutate: withPriority("tandem-test-low"),
		annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=2"}})
	e.bound("warm")
	// 4 - 1 - 2 reserved leaves 1 cpu: only preempting warm makes room.
	e.create("urgent", podSpec{cpu: "2500m", mutate: withPriority("tandem-test-high")})
	if got := e.bound("urgent"); got != "pe-n1" {
		t.Fatalf("urgent landed on %q", got)
	}
	if _, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, "warm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("warm runner still there after the preemption (err %v)", err)
	}
}

// Preemption never treats a reservation as free room: a pod may evict
// lower-priority pods, but the reservation of a runner of its own priority
// stays counted, so evicting the filler would not help and does not happen.
func TestPreemptionKeepsEqualPriorityReservation(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"pk-n1": "4"})
	e.priorityClasses()
	e.create("critical", podSpec{cpu: "1", runner: true, mutate: withPriority("tandem-test-high"),
		annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=2"}})
	e.bound("critical")
	e.create("filler", podSpec{cpu: "500m", mutate: withPriority("tandem-test-low")})
	e.bound("filler")
	// 4 - 1 - 0.5 - 2 reserved = 0.5; without the filler 1: never 2.5.
	e.create("other", podSpec{cpu: "2500m", mutate: withPriority("tandem-test-high")})
	wantContains(t, "other's PodScheduled message", e.unschedulable("other"), contract.ErrReasonRoomReserved)
	if pod := e.get("filler"); pod.DeletionTimestamp != nil {
		t.Error("the filler was evicted although that leaves too little room beside the reservation")
	}
	if got := e.get("other").Status.NominatedNodeName; got != "" {
		t.Errorf("other was nominated to %s", got)
	}
}
