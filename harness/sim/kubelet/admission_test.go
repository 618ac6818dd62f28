package kubelet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

func TestAdmit(t *testing.T) {
	node := st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "2", v1.ResourceMemory: "4Gi", v1.ResourceEphemeralStorage: "10Gi",
		v1.ResourcePods: "3", "example.com/gpu": "1",
	}).Obj()
	pod := func(name string, req map[v1.ResourceName]string) *st.PodWrapper {
		return st.MakePod().Name(name).UID(name).Node("n1").Req(req)
	}
	running := func(p *st.PodWrapper) *v1.Pod { return p.Phase(v1.PodRunning).Obj() }
	half := pod("half", map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"})

	tests := map[string]struct {
		pod         *v1.Pod
		admitted    []*v1.Pod
		wantReason  string
		wantMessage string
	}{
		"fits next to an admitted pod": {
			pod:      pod("new", map[v1.ResourceName]string{v1.ResourceCPU: "1", v1.ResourceMemory: "2Gi"}).Obj(),
			admitted: []*v1.Pod{running(half)},
		},
		"OutOfcpu": {
			pod:         pod("new", map[v1.ResourceName]string{v1.ResourceCPU: "1500m"}).Obj(),
			admitted:    []*v1.Pod{running(half)},
			wantReason:  "OutOfcpu",
			wantMessage: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000",
		},
		"OutOfmemory": {
			pod:         pod("new", map[v1.ResourceName]string{v1.ResourceMemory: "3Gi"}).Obj(),
			admitted:    []*v1.Pod{running(half)},
			wantReason:  "OutOfmemory",
			wantMessage: "Node didn't have enough resource: memory, requested: 3221225472, used: 2147483648, capacity: 4294967296",
		},
		"OutOfephemeral-storage": {
			pod:         pod("new", map[v1.ResourceName]string{v1.ResourceEphemeralStorage: "11Gi"}).Obj(),
			wantReason:  "OutOfephemeral-storage",
			wantMessage: "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240",
		},
		"OutOf an extended resource": {
			pod:         pod("new", map[v1.ResourceName]string{"example.com/gpu": "2"}).Obj(),
			wantReason:  "OutOfexample.com/gpu",
			wantMessage: "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1",
		},
		"OutOfpods: the pods limit counts admitted pods": {
			pod: pod("new", nil).Obj(),
			admitted: []*v1.Pod{
				running(pod("a", nil)), running(pod("b", nil)), running(pod("c", nil)),
			},
			wantReason:  "OutOfpods",
			wantMessage: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
		},
		"terminal pods hold nothing": {
			pod: pod("new", map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj(),
			admitted: []*v1.Pod{
				pod("done", map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Phase(v1.PodSucceeded).Obj(),
				pod("rejected", map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Phase(v1.PodFailed).Obj(),
			},
		},
		"host port taken": {
			pod:         pod("new", nil).ContainerPort([]v1.ContainerPort{{HostPort: 6379, ContainerPort: 6379, Protocol: v1.ProtocolTCP}}).Obj(),
			admitted:    []*v1.Pod{running(pod("redis", nil).ContainerPort([]v1.ContainerPort{{HostPort: 6379, ContainerPort: 6379, Protocol: v1.ProtocolTCP}}))},
			wantReason:  "NodePorts",
			wantMessage: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Admit(node, tc.pod, tc.admitted)
			want := Result{Admit: tc.wantReason == "", Reason: tc.wantReason, Message: tc.wantMessage}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Admit (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestRejectedStatus(t *testing.T) {
	pod := st.MakePod().Name("wf").UID("wf").Obj()
	got := RejectedStatus(pod, Result{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 1500, used: 3750, capacity: 4000"})
	want := v1.PodStatus{
		Phase:   v1.PodFailed,
		Reason:  "OutOfcpu",
		Message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 1500, used: 3750, capacity: 4000",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RejectedStatus (-want,+got):\n%s", diff)
	}
}
