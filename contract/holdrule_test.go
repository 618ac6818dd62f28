package contract

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The hold rule's arithmetic, branch by branch. Every reader runs the
// scenarios of holdruletest against it through what it sees of the pods.
func TestHoldingHolds(t *testing.T) {
	cpu := func(milli int64) Amount { return Amount{MilliCPU: milli, Pods: 1} }
	// 2 cpu for the workflow pod, 1 for a step pod, each one pod.
	size, step := Amount{MilliCPU: 3000, Pods: 2}, cpu(1000)
	tests := map[string]struct {
		h         Holding
		on        RunnerPods
		want      Amount
		wantPorts bool
	}{
		"before the workflow pod: all of it, host ports too": {h: Holding{Size: size, Step: step}, want: size, wantPorts: true},
		"before the workflow pod, a step pod there":          {h: Holding{Size: size, Step: step}, on: RunnerPods{Steps: cpu(1000)}, want: Amount{MilliCPU: 2000, Pods: 1}, wantPorts: true},
		"claimed, not in the node's accounting yet: all":     {h: Holding{Size: size, Step: step, Claimed: true}, on: RunnerPods{Steps: cpu(1000)}, want: size, wantPorts: true},
		"workflow pod as reserved: the step headroom":        {h: Holding{Size: size, Step: step}, on: RunnerPods{Workflow: true, WorkflowRequest: cpu(2000)}, want: step},
		"workflow pod smaller: the headroom, no more":        {h: Holding{Size: size, Step: step}, on: RunnerPods{Workflow: true, WorkflowRequest: cpu(1000)}, want: step},
		"workflow pod larger: it eats into the headroom":     {h: Holding{Size: size, Step: step}, on: RunnerPods{Workflow: true, WorkflowRequest: cpu(2500)}, want: cpu(500)},
		"a step pod uses the headroom":                       {h: Holding{Size: size, Step: step}, on: RunnerPods{Workflow: true, WorkflowRequest: cpu(2000), Steps: cpu(1000)}},
		"a step pod larger than the headroom: not below 0":   {h: Holding{Size: size, Step: step}, on: RunnerPods{Workflow: true, WorkflowRequest: cpu(2000), Steps: cpu(2000)}},
		"no step headroom: nothing once the workflow pod is there": {
			h: Holding{Size: cpu(2000)}, on: RunnerPods{Workflow: true, WorkflowRequest: cpu(2000)},
		},
		"a job without a container: the step headroom less the steps": {h: Holding{Size: size, Step: cpu(1500), NoWorkflowPod: true}, on: RunnerPods{Steps: cpu(1000)}, want: Amount{MilliCPU: 500}},
		"ended: nothing": {h: Holding{Size: size, Step: step, Ended: true}, on: RunnerPods{Workflow: true, WorkflowRequest: cpu(2000)}},
		"a placeholder there: what it requests is the node's already": {
			h: Holding{Size: size, Step: step}, on: RunnerPods{Placeholder: cpu(2000), HasPlaceholder: true}, want: Amount{MilliCPU: 1000, Pods: 1}, wantPorts: true,
		},
		"a placeholder larger than what is held: not below 0": {
			h: Holding{Size: size, Step: step}, on: RunnerPods{Workflow: true, WorkflowRequest: cpu(2000), Placeholder: cpu(3000), HasPlaceholder: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ports := tc.h.Holds(tc.on)
			if !got.Equal(tc.want) || ports != tc.wantPorts {
				t.Errorf("Holds = %s (pods %d), ports %v; want %s (pods %d), ports %v", got, got.Pods, ports, tc.want, tc.want.Pods, tc.wantPorts)
			}
		})
	}
}

func TestOfIncarnation(t *testing.T) {
	created := time.Unix(1000, 0)
	pod := func(uid types.UID, at int64) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, CreationTimestamp: metav1.Unix(at, 0)}}
	}
	tests := map[string]struct {
		pod  *v1.Pod
		want bool
	}{
		"created with the runner":                 {pod: pod("a", 1000), want: true},
		"created after it":                        {pod: pod("a", 1200), want: true},
		"created before it (an earlier runner's)": {pod: pod("a", 999)},
		"recorded as stale":                       {pod: pod("stale", 1200)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := OfIncarnation(tc.pod, created, []types.UID{"stale"}); got != tc.want {
				t.Errorf("OfIncarnation = %v, want %v", got, tc.want)
			}
		})
	}
}
