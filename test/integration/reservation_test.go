package integration

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/tandem-scheduler/tandem/contract"
)

// (b) A non-runner pod cannot take reserved room; it gets the room once the
// reservation is claimed by a smaller workflow pod, or released.
func TestReservedRoomIsNotFree(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"b-n1": "2"})
	e.runner("r1", "1", "1")
	e.bound("r1")

	e.create("other", podSpec{cpu: "500m"})
	wantContains(t, "pending message", e.unschedulable("other"), contract.ErrReasonRoomReserved)

	// The workflow pod needs only half of what was reserved: the other
	// half is free the moment it claims the reservation.
	e.create("r1-workflow", podSpec{cpu: "500m", workflowOf: "r1", node: "b-n1"})
	if got := e.bound("other"); got != "b-n1" {
		t.Fatalf("other landed on %q", got)
	}

	// Released: r2's reservation holds the last cpu until r2 goes.
	e.delete("other")
	e.delete("r1-workflow")
	e.delete("r1")
	e.runner("r2", "500m", "500m")
	e.bound("r2")
	// 2 - 0.5 = 1.5 cpu is free to kube-scheduler, 1 cpu once r2's
	// reservation is counted.
	e.create("other2", podSpec{cpu: "1500m"})
	wantContains(t, "pending message", e.unschedulable("other2"), contract.ErrReasonRoomReserved)
	e.delete("r2")
	if got := e.bound("other2"); got != "b-n1" {
		t.Fatalf("other2 landed on %q", got)
	}
}

// (c) A workflow pod scheduled by tandem lands on its runner's node even when
// another node has more room, and the node's accounting is exact afterwards.
func TestWorkflowPodThroughTandem(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"c-small": "3", "c-big": "16"})
	r1 := e.create("r1", podSpec{cpu: "1", runner: true, onNode: "c-small",
		annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1"}})
	e.bound("r1")

	// As hooks v0.7.0 with ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true creates it:
	// a required hostname affinity to the runner's node.
	wf := e.create("r1-workflow", podSpec{cpu: "1", workflowOf: "r1", mutate: requireNode("c-small")})
	if got := e.bound("r1-workflow"); got != "c-small" {
		t.Fatalf("workflow pod landed on %q, want its runner's node c-small", got)
	}
	wantContains(t, "claim event", e.event(wf.Name, contract.ReasonClaimed), "runner r1", "c-small")
	_ = r1

	// c-small: 3 cpu - runner 1 - workflow 1 = 1 free, counted once.
	e.create("too-big", podSpec{cpu: "1001m", onNode: "c-small"})
	e.unschedulable("too-big")
	e.create("exact", podSpec{cpu: "1", onNode: "c-small"})
	e.bound("exact")
}

func requireNode(node string) func(*v1.Pod) {
	return func(pod *v1.Pod) {
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
			}}},
		}}
	}
}

// (d) A workflow pod pinned with nodeName turns the reservation into itself:
// no gap, no double count.
func TestWorkflowPodWithNodeName(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"d-n1": "3"})
	e.runner("r1", "1", "1")
	e.bound("r1")
	wf := e.create("r1-workflow", podSpec{cpu: "1", workflowOf: "r1", node: "d-n1"})
	wantContains(t, "claim event", e.event(wf.Name, contract.ReasonClaimed), "runner r1", "d-n1")

	e.create("too-big", podSpec{cpu: "1001m"})
	e.unschedulable("too-big")
	e.create("exact", podSpec{cpu: "1"})
	e.bound("exact")
}

// (e) Deleting the runner releases its room.
func TestRunnerDeletedReleasesRoom(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"e-n1": "2"})
	e.runner("r1", "1", "1")
	e.bound("r1")
	e.create("other", podSpec{cpu: "2"})
	e.unschedulable("other")
	e.delete("r1")
	e.bound("other")
	wantContains(t, "release event", e.event("r1", contract.ReasonReleased), "cpu=1", "e-n1", "deleted")
}

// (f) tandem restarts between the runner's bind and its workflow pod: the
// reservation is rebuilt from the runner pod before anything is scheduled.
func TestRestartKeepsReservation(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"f-n1": "3"})
	e.runner("r1", "1", "1")
	e.bound("r1")

	if node, cpu, source := e.recordedReservation("r1"); node != "f-n1" || cpu != "1" || source != "annotation" {
		t.Errorf("recorded reservation = %s %s %s, want cpu 1 on f-n1 from annotation", node, cpu, source)
	}

	e.stopScheduler()
	// Created while no scheduler runs: the first cycle after the restart
	// must already see the reservation.
	e.create("too-big", podSpec{cpu: "2"})
	e.startScheduler()
	wantContains(t, "pending message", e.unschedulable("too-big"), contract.ErrReasonRoomReserved)
	e.create("exact", podSpec{cpu: "1"})
	e.bound("exact")
}
