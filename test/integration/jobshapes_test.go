package integration

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
)

// stepRunner creates a runner of 1 cpu whose workflow pod needs 1 cpu and
// whose container steps 1 cpu more.
func (e *env) stepRunner(name string) {
	e.t.Helper()
	e.create(name, podSpec{cpu: "1", runner: true, annotations: map[string]string{
		contract.WorkflowRequestsAnnotation: "cpu=1",
		contract.StepRequestsAnnotation:     "cpu=1",
	}})
}

// Container steps: once the workflow pod claimed, the step headroom stays
// held; another pod waits while the runner's step pods use it, through
// tandem, in both hooks' forms (hooks v0.8: a pod labelled with the runner;
// hooks v0.7.0: the pod of a Job labelled with the runner).
func TestStepPodUsesHeadroomAfterClaim(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"st-n1": "4"})
	e.stepRunner("r1")
	node := e.bound("r1")
	e.create("r1-workflow", podSpec{cpu: "1", workflowOf: "r1", node: node})
	e.event("r1-workflow", contract.ReasonClaimed)

	// 4 - runner 1 - workflow pod 1 - headroom 1: 1 cpu for anyone else.
	e.create("other", podSpec{cpu: "1500m"})
	wantContains(t, "other's PodScheduled message", e.unschedulable("other"), contract.ErrReasonRoomReserved)

	e.create("r1-step-v08", podSpec{cpu: "1", workflowOf: "r1", onNode: node})
	if got := e.bound("r1-step-v08"); got != node {
		t.Fatalf("step pod landed on %q", got)
	}
	// A restart while the step pod runs. It was created in the workflow
	// pod's second, and sorts before it by name (and so does the
	// apiserver's list): the workflow pod must still be the claim, or the
	// step pod's end would use the reservation up and give the headroom
	// away while the job runs (checked below, once the step pod is gone).
	e.stopScheduler()
	e.startScheduler()
	e.delete("r1-step-v08")

	job, err := e.client.BatchV1().Jobs(e.ns).Create(e.ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "r1-step-0a1b2c3d", Labels: map[string]string{"runner-pod": "r1"}},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(0)),
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
				Containers: []v1.Container{{Name: "step", Image: "step"}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.create("r1-step-v07", podSpec{cpu: "1", onNode: node, mutate: func(pod *v1.Pod) {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}
	}})
	if got := e.bound("r1-step-v07"); got != node {
		t.Fatalf("the step Job's pod landed on %q", got)
	}
	if e.get("other").Spec.NodeName != "" {
		t.Error("other took the step headroom")
	}
	e.delete("r1-step-v07")
	e.delete("r1-workflow")
	e.delete("r1")
	if got := e.bound("other"); got != node {
		t.Errorf("other landed on %q once the runner ended", got)
	}
}

// Service host ports: two runners declare the same port on a one-node
// cluster; the second waits until the first's pair ends, instead of its
// workflow pod being rejected by the kubelet for the port.
func TestSameHostPortTwoRunners(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"hp-n1": "8"})
	redis := func(name string) {
		e.create(name, podSpec{cpu: "1", runner: true, annotations: map[string]string{
			contract.WorkflowRequestsAnnotation: "cpu=1",
			contract.HostPortsAnnotation:        "6379",
		}})
	}
	redis("r1")
	e.bound("r1")
	redis("r2")
	wantContains(t, "r2's PodScheduled message", e.unschedulable("r2"), contract.ErrReasonPortsTaken)
	// r1's workflow pod holds the port itself once it is there.
	e.create("r1-workflow", podSpec{cpu: "1", workflowOf: "r1", node: "hp-n1", mutate: func(pod *v1.Pod) {
		pod.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 6379, HostPort: 6379}}
	}})
	e.event("r1-workflow", contract.ReasonClaimed)
	if e.get("r2").Spec.NodeName != "" {
		t.Fatal("r2 was placed beside the workflow pod that uses its port")
	}
	e.delete("r1-workflow")
	e.delete("r1")
	e.bound("r2")
}

// A job without a container: the runner's EphemeralRunner shows the job,
// no workflow pod comes, and after the grace the room is given back.
func TestJobWithoutContainerReleasesAfterGrace(t *testing.T) {
	e := newEnv(t, tandemConfig("noWorkflowPodGrace: 2s"), map[string]string{"nc-n1": "3"})
	e.runner("r1", "1", "2")
	e.bound("r1")
	e.create("other", podSpec{cpu: "2"})
	wantContains(t, "other's PodScheduled message", e.unschedulable("other"), contract.ErrReasonRoomReserved)

	dyn := dynamic.NewForConfigOrDie(restConfig).Resource(contract.EphemeralRunnerResource).Namespace(e.ns)
	er, err := dyn.Get(e.ctx, "r1", metav1.GetOptions{}) // e.runner made it
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(er.Object, "4711", "status", "jobId"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.UpdateStatus(e.ctx, er, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := e.bound("other"); got != "nc-n1" {
		t.Errorf("other landed on %q", got)
	}
	wantContains(t, "release event", e.event("r1", contract.ReasonReleased), "no workflow pod came")
}

// kubernetes-novolume (hooks v0.8): a workflow pod whose template adds a
// required pool affinity is not pinned. Larger than reserved and without
// room on the runner's node, it goes to another node of the pool, where it
// claims nothing (issue 20: that used the reservation up, so any pod
// labelled with the runner's name could void the runner's room): the
// runner's room stays held until the runner ends.
func TestUnpinnedWorkflowPodGoesElsewhere(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"nv-n1": "3", "nv-n2": "4"})
	for _, n := range []string{"nv-n1", "nv-n2"} {
		e.labelNode(n, "pool", "ci")
	}
	e.create("r1", podSpec{cpu: "1", runner: true, onNode: "nv-n1", annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1"}})
	e.bound("r1")
	e.create("r1-workflow", podSpec{cpu: "2500m", workflowOf: "r1", mutate: func(pod *v1.Pod) {
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "pool", Operator: v1.NodeSelectorOpIn, Values: []string{"ci"}}},
			}}},
		}}
	}})
	if got := e.bound("r1-workflow"); got != "nv-n2" {
		t.Fatalf("workflow pod landed on %q, want nv-n2: nv-n1 has 2 of the 2.5 cpu it needs", got)
	}
	wantContains(t, "warning on the workflow pod", e.event("r1-workflow", contract.ReasonNoReservation), "claims nothing")
	// The runner's room stays held for it until it ends.
	e.create("other", podSpec{cpu: "2", onNode: "nv-n1"})
	wantContains(t, "other while r1 holds its room", e.unschedulable("other"), contract.ErrReasonRoomReserved)
	e.delete("r1")
	if got := e.bound("other"); got != "nv-n1" {
		t.Errorf("other landed on %q once r1 ended, want nv-n1", got)
	}
}

// The next hook (upstream PRs #339/#445) prefers the runner's node by
// default: the workflow pod lands there and claims; with
// ACTIONS_RUNNER_HOOK_RWO=true it requires it, which is pinned.
func TestNextHookAffinities(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"nh-n1": "3", "nh-n2": "3"})
	e.runner("preferred", "1", "1")
	node := e.bound("preferred")
	e.create("preferred-workflow", podSpec{cpu: "1", workflowOf: "preferred", mutate: func(pod *v1.Pod) {
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 100, Preference: v1.NodeSelectorTerm{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
			}}},
		}}
	}})
	if got := e.bound("preferred-workflow"); got != node {
		t.Errorf("preferred workflow pod landed on %q, want its runner's %q", got, node)
	}
	e.event("preferred-workflow", contract.ReasonClaimed)

	e.runner("rwo", "1", "1")
	rwoNode := e.bound("rwo")
	e.create("rwo-workflow", podSpec{cpu: "1", workflowOf: "rwo", mutate: requireNode(rwoNode)})
	if got := e.bound("rwo-workflow"); got != rwoNode {
		t.Errorf("RWO workflow pod landed on %q, want %q", got, rwoNode)
	}
	e.event("rwo-workflow", contract.ReasonClaimed)
}

func (e *env) labelNode(name, key, value string) {
	e.t.Helper()
	node, err := e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	node.Labels[key] = value
	if _, err := e.client.CoreV1().Nodes().Update(e.ctx, node, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}
