package integration

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	basemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
)

// counterValue is the value of a counter of this process's registry (the
// in-process scheduler's).
func counterValue(t *testing.T, c basemetrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Issue 40: nothing told an operator that tandem-webhook had failed open. A
// pinned workflow pod created while its runner's placeholder still holds
// the room (the webhook is down, or its NetworkPolicy keeps the apiserver
// out) is reported: a PlaceholderNotReleased Warning on the pod, and
// placeholder_pods_total{action="released_late"}, which an alert watches;
// tandem's fallback then deletes the placeholder. With the webhook up, the
// same job reports nothing.
func TestPlaceholderNotReleasedIsReported(t *testing.T) {
	e := newEnv(t, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, ReservationMode: "Pods"}), map[string]string{"late-n1": "8"})
	late := metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderReleasedLate)
	before := counterValue(t, late)

	wh := e.startWebhook()
	e.runner("r1", "1", "2")
	node := e.bound("r1")
	e.oneTandemPodOf(contract.PlaceholderLabel, contract.PlaceholderOfAnnotation, "r1")
	e.create("r1-workflow", podSpec{cpu: "2", node: node, workflowOf: "r1"})

	if err := wh.Stop(); err != nil {
		t.Fatal(err)
	}
	e.runner("r2", "1", "2")
	if got := e.bound("r2"); got != node {
		t.Fatalf("r2 on %s, want %s (the only node)", got, node)
	}
	hold := e.oneTandemPodOf(contract.PlaceholderLabel, contract.PlaceholderOfAnnotation, "r2")
	e.create("r2-workflow", podSpec{cpu: "2", node: node, workflowOf: "r2"})
	wantContains(t, "r2-workflow's warning", e.event("r2-workflow", contract.ReasonPlaceholderNotReleased), hold.Name, "tandem-webhook did not release it")
	e.poll("tandem's fallback deletes r2's placeholder", func() (bool, error) { return e.gone(&hold), nil })

	if got := counterValue(t, late) - before; got != 1 {
		t.Errorf("placeholder_pods_total{action=released_late} grew by %v, want 1 (r2's only)", got)
	}
	if n := e.countEvents("r1-workflow", contract.ReasonPlaceholderNotReleased); n != 0 {
		t.Errorf("r1-workflow, admitted through the webhook, has %d PlaceholderNotReleased events", n)
	}
}

// Issue 40: a workflow pod a kubelet rejects is the failure tandem exists
// to prevent, and nothing counted it. The kubelet's rejection (phase
// Failed, reason OutOfcpu, "Pod was rejected: ...", written here through
// the API as the kubelet writes it) is counted once by reason and told to
// the runner; TestSeedOnRealKubelets shows a real kubelet writing it.
func TestKubeletRejectionIsReported(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"reject-n1": "4"})
	rejected := metrics.WorkflowPodsRejected.WithLabelValues("OutOfcpu")
	before := counterValue(t, rejected)
	e.runner("r1", "1", "2")
	node := e.bound("r1")
	wf := e.create("r1-workflow", podSpec{cpu: "2", node: node, workflowOf: "r1"})
	reject := func(pod *v1.Pod, reason, message string) {
		t.Helper()
		pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: reason, Message: message}
		if _, err := e.client.CoreV1().Pods(e.ns).UpdateStatus(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reject(wf, "OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000")
	note := e.event("r1", contract.ReasonRejectedByKubelet)
	wantContains(t, "r1's warning", note, "r1-workflow", "OutOfcpu", "Node didn't have enough resource")
	// A second update of the rejected pod is not a second rejection. The
	// same informer then delivers a step pod's rejection: once that is
	// counted, so is whatever the second update did.
	reject(wf, "OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu (again)")
	other := metrics.WorkflowPodsRejected.WithLabelValues(metrics.RejectedOther)
	otherBefore := counterValue(t, other)
	// A pod of another namespace labelled as r1's is no pod of r1's: its
	// rejection is not counted, and r1 is not told.
	e.ensureNamespace(e.ns + "-impostor")
	impostor, err := e.client.CoreV1().Pods(e.ns+"-impostor").Create(e.ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "r1-workflow", Labels: map[string]string{"runner-pod": "r1"}},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "image"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	impostor.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfnvidia.com/gpu", Message: "Pod was rejected: forged"}
	if _, err := e.client.CoreV1().Pods(impostor.Namespace).UpdateStatus(e.ctx, impostor, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	step := e.create("r1-step", podSpec{cpu: "1", node: node, workflowOf: "r1"})
	reject(step, "OutOfnvidia.com/gpu", "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu")
	// The step pod's event comes after its count, and the informer delivers
	// the impostor's rejection before the step pod's: once r1 has both
	// events, everything is counted.
	e.poll("r1 is told of its step pod's rejection too", func() (bool, error) {
		return e.countEvents("r1", contract.ReasonRejectedByKubelet) == 2, nil
	})
	if got := counterValue(t, rejected) - before; got != 1 {
		t.Errorf("workflow_pods_rejected_total{reason=OutOfcpu} grew by %v, want 1", got)
	}
	if got := counterValue(t, other) - otherBefore; got != 1 {
		t.Errorf("workflow_pods_rejected_total{reason=Other} grew by %v, want 1 (the step pod; not the impostor)", got)
	}

	if strings.Contains(note, "Pod was rejected: ") {
		t.Errorf("the runner's warning repeats the kubelet's prefix: %q", note)
	}
}
