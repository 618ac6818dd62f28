//go:build !tandem_k8s_1_34

package workflowreservation

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// sign runs PreFilter then SignPod for pod, as the framework does, and
// returns the signature (nil: not signed).
func sign(t *testing.T, pl *WorkflowReservation, pod *v1.Pod) []byte {
	t.Helper()
	ctx := context.Background()
	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), pod, fourNodes()); !status.IsSuccess() && !status.IsSkip() {
		t.Fatalf("PreFilter of %s: %v", pod.Name, status)
	}
	fragments, status := pl.SignPod(ctx, pod)
	if !status.IsSuccess() {
		return nil
	}
	sig := map[string]any{}
	for _, f := range fragments {
		sig[f.Key] = f.Value
	}
	data, err := json.Marshal(sig)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A pod's signature covers what Filter and Score read of it: pods that
// sign alike are filtered and scored alike, and a pod that may use one
// runner's room is not signed at all.
func TestSignPod(t *testing.T) {
	runner := func(name, workflow string) *v1.Pod {
		return runnerPod(name).Annotation(contract.WorkflowRequestsAnnotation, workflow).Req(units("500m")).Obj()
	}
	plain := func(name, cpu string, ports ...v1.ContainerPort) *v1.Pod {
		return st.MakePod().Namespace("arc").Name(name).UID(name).Req(units(cpu)).ContainerPort(ports).Obj()
	}
	tests := map[string]struct {
		a, b     *v1.Pod
		held     bool
		wantSame bool
	}{
		"two runners of a scale set":              {a: runner("r1", "cpu=2"), b: runner("r2", "cpu=2"), wantSame: true},
		"runners whose workflow pods differ":      {a: runner("r1", "cpu=2"), b: runner("r2", "cpu=3"), wantSame: false},
		"a runner and a pod of its own request":   {a: runner("r1", "cpu=2"), b: plain("p", "500m"), wantSame: false},
		"two plain pods among reservations":       {a: plain("p1", "1"), b: plain("p2", "1"), held: true, wantSame: true},
		"plain pods of other sizes":               {a: plain("p1", "1"), b: plain("p2", "2"), held: true, wantSame: false},
		"plain pods, nothing held":                {a: plain("p1", "1"), b: plain("p2", "1"), wantSame: true},
		"the same host port, another protocol":    {a: plain("p1", "1", v1.ContainerPort{HostPort: 53, Protocol: v1.ProtocolTCP}), b: plain("p2", "1", v1.ContainerPort{HostPort: 53, Protocol: v1.ProtocolUDP}), held: true, wantSame: false},
		"a runner held, a runner of another sort": {a: runner("r1", "cpu=2"), b: runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Annotation(contract.HostPortsAnnotation, "6379").Req(units("500m")).Obj(), wantSame: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			if tc.held {
				pl.store.Take(oneUnitReservation("held"))
			}
			a, b := sign(t, pl, tc.a), sign(t, pl, tc.b)
			if a == nil || b == nil {
				t.Fatalf("not signed: %s, %s", a, b)
			}
			if same := bytes.Equal(a, b); same != tc.wantSame {
				t.Errorf("signatures alike: %t, want %t:\n%s\n%s", same, tc.wantSame, a, b)
			}
		})
	}
}

func TestSignPodRefuses(t *testing.T) {
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	pl.store.Take(oneUnitReservation("r1"))
	wf := workflowPod("r1").Req(units("1")).Obj()
	if sig := sign(t, pl, wf); sig != nil {
		t.Errorf("a workflow pod that claims r1's room signed %s", sig)
	}
	step := st.MakePod().Namespace("arc").Name("s").UID("s").Label("runner-pod", "r1").Req(units("1")).Obj()
	pl.store.Claim(key("r1"), "r1", wf.UID, "n1")
	r, _ := pl.store.Get(key("r1"))
	r.Step = r.Size
	pl.store.Take(&r)
	if sig := sign(t, pl, step); sig != nil {
		t.Errorf("a step pod that may use r1's headroom signed %s", sig)
	}
	// Signed only right after its own PreFilter.
	other := st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj()
	sign(t, pl, other)
	if _, status := pl.SignPod(context.Background(), other.DeepCopy()); status.Code() != fwk.Unschedulable {
		t.Errorf("a pod PreFilter did not see in this cycle: status %v, want Unschedulable", status)
	}
}
