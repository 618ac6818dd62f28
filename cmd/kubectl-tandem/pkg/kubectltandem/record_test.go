package kubectltandem

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

// The plugin's checks of a record (reservations.FromPod and trusted).
func TestInvalid(t *testing.T) {
	good := contract.Recorded{Node: "n1", Requests: rl("cpu=2,pods=2"), StepRequests: rl("cpu=500m,pods=1"), HostPorts: []string{"6379", "53/udp"}}
	runner := makePod("arc", "r1").runner().node("n1")
	testCases := map[string]struct {
		pod  *podWrapper
		rec  func(contract.Recorded) contract.Recorded
		want string
	}{
		"valid": {pod: runner},
		"not a runner": {
			pod:  makePod("arc", "r1").node("n1"),
			want: "the pod does not match the runner selector actions-ephemeral-runner=True",
		},
		"another scheduler's pod": {
			pod:  makePod("arc", "r1").runner().scheduler("default-scheduler").node("n1"),
			want: `the pod's scheduler "default-scheduler" is not tandem (--scheduler-name)`,
		},
		"recorded for another pod": {
			pod:  runner,
			rec:  func(r contract.Recorded) contract.Recorded { r.RunnerUID = "someone-else"; return r },
			want: `recorded for pod UID "someone-else", not this pod (r1-uid)`,
		},
		"not bound": {
			pod:  makePod("arc", "r1").runner(),
			want: "the pod is not bound",
		},
		"another node": {
			pod:  makePod("arc", "r1").runner().node("n2"),
			want: `names node "n1" but the pod is bound to "n2"`,
		},
		"asks for nothing": {
			pod:  runner,
			rec:  func(r contract.Recorded) contract.Recorded { r.Requests, r.StepRequests = rl("cpu=0"), nil; return r },
			want: "holds no valid requests (cpu=0)",
		},
		"negative": {
			pod: runner,
			rec: func(r contract.Recorded) contract.Recorded {
				r.Requests, r.StepRequests = rl("cpu=1"), nil
				r.Requests["memory"] = q("-1Gi")
				return r
			},
			want: "holds no valid requests (cpu=1,memory=-1Gi)",
		},
		"step headroom beyond the size": {
			pod:  runner,
			rec:  func(r contract.Recorded) contract.Recorded { r.StepRequests = rl("cpu=3"); return r },
			want: "stepRequests cpu=3 are not within requests cpu=2,pods=2",
		},
		"unreadable host port": {
			pod:  runner,
			rec:  func(r contract.Recorded) contract.Recorded { r.HostPorts = []string{"6379/QUIC"}; return r },
			want: `host port "6379/QUIC": protocol "QUIC" is not TCP, UDP or SCTP`,
		},
		"host port out of range": {
			pod:  runner,
			rec:  func(r contract.Recorded) contract.Recorded { r.HostPorts = []string{"70000"}; return r },
			want: `host port "70000": want a port from 1 to 65535, optionally /TCP, /UDP or /SCTP`,
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			rec := good
			rec.RunnerUID = "r1-uid"
			if tc.rec != nil {
				rec = tc.rec(rec)
			}
			rules := DefaultRules()
			if diff := cmp.Diff(tc.want, rules.invalid(tc.pod.obj(), rec)); diff != "" {
				t.Errorf("invalid (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestRecordedReservation(t *testing.T) {
	pod := makePod("arc", "r1").annotate(contract.ReservationAnnotation,
		`{"node":"n1","requests":{"cpu":"2500m","memory":"5Gi","pods":"1"},"source":"hook-template","runnerUID":"u1","staleWorkflowPods":["w0"],"stepRequests":{"cpu":"500m"},"hostPorts":["6379/TCP"]}`).obj()
	got, ok, err := contract.RecordedReservation(pod)
	if err != nil || !ok {
		t.Fatalf("RecordedReservation = %v, %v", ok, err)
	}
	want := contract.Recorded{Node: "n1", Requests: rl("cpu=2500m,memory=5Gi,pods=1"), Source: "hook-template", RunnerUID: "u1",
		StaleWorkflowPods: []types.UID{"w0"}, StepRequests: rl("cpu=500m"), HostPorts: []string{"6379/TCP"}}
	if diff := cmp.Diff(want, got, quantities); diff != "" {
		t.Errorf("RecordedReservation (-want,+got):\n%s", diff)
	}
	if _, ok, _ := contract.RecordedReservation(makePod("arc", "r2").obj()); ok {
		t.Error("RecordedReservation found a record on a pod without one")
	}
}
