package contract

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func list(pairs ...string) v1.ResourceList {
	rl := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		rl[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return rl
}

func boundRunner(uid, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "r1", UID: "r1-uid"},
		Spec:       v1.PodSpec{NodeName: node},
	}
}

// The checks every reader makes before a record holds room.
func TestValidate(t *testing.T) {
	good := Recorded{Node: "n1", Requests: list("cpu", "2", "pods", "2"), StepRequests: list("cpu", "500m", "pods", "1"),
		HostPorts: []string{"6379", "53/udp"}, RunnerUID: "r1-uid"}
	testCases := map[string]struct {
		pod       *v1.Pod
		rec       func(Recorded) Recorded
		wantPorts []HostPort
		wantErr   string
	}{
		"valid": {
			pod:       boundRunner("r1-uid", "n1"),
			wantPorts: []HostPort{{Protocol: v1.ProtocolTCP, Port: 6379}, {Protocol: v1.ProtocolUDP, Port: 53}},
		},
		"recorded for another pod": {
			pod:     boundRunner("r1-uid", "n1"),
			rec:     func(r Recorded) Recorded { r.RunnerUID = "someone-else"; return r },
			wantErr: `recorded for pod UID "someone-else", not this pod (r1-uid)`,
		},
		// Issue 37: a record is anyone's to write who may patch the pod
		// (without podsAdmissionPolicy).
		"more host ports than a reservation holds": {
			pod: boundRunner("r1-uid", "n1"),
			rec: func(r Recorded) Recorded {
				r.HostPorts = nil
				for p := range MaxHostPorts + 1 {
					r.HostPorts = append(r.HostPorts, strconv.Itoa(8000+p))
				}
				return r
			},
			wantErr: "holds 17 host ports, more than 16",
		},
		"more earlier workflow pods than a record keeps": {
			pod: boundRunner("r1-uid", "n1"),
			rec: func(r Recorded) Recorded {
				for p := range MaxStaleWorkflowPods + 1 {
					r.StaleWorkflowPods = append(r.StaleWorkflowPods, types.UID(strconv.Itoa(p)))
				}
				return r
			},
			wantErr: "names 17 earlier workflow pods, more than 16",
		},
		"not bound": {
			pod:     boundRunner("r1-uid", ""),
			wantErr: "the pod is not bound",
		},
		"another node": {
			pod:     boundRunner("r1-uid", "n2"),
			wantErr: `names node "n1" but the pod is bound to "n2"`,
		},
		"asks for nothing": {
			pod:     boundRunner("r1-uid", "n1"),
			rec:     func(r Recorded) Recorded { r.Requests, r.StepRequests = list("cpu", "0"), nil; return r },
			wantErr: "holds no valid requests (cpu=0)",
		},
		"no requests at all": {
			pod:     boundRunner("r1-uid", "n1"),
			rec:     func(r Recorded) Recorded { r.Requests, r.StepRequests = nil, nil; return r },
			wantErr: "holds no valid requests (nothing)",
		},
		"negative": {
			pod: boundRunner("r1-uid", "n1"),
			rec: func(r Recorded) Recorded {
				r.Requests, r.StepRequests = list("cpu", "1", "memory", "-1Gi"), nil
				return r
			},
			wantErr: "holds no valid requests (cpu=1,memory=-1Gi)",
		},
		// Issue 20: beyond int64 in the scheduler's units it wraps around
		// (here to 384m).
		"beyond what the scheduler counts": {
			pod: boundRunner("r1-uid", "n1"),
			rec: func(r Recorded) Recorded {
				r.Requests, r.StepRequests = list("cpu", "18446744073709552"), nil
				return r
			},
			wantErr: "holds no valid requests (cpu=18446744073709552)",
		},
		"negative step headroom": {
			pod:     boundRunner("r1-uid", "n1"),
			rec:     func(r Recorded) Recorded { r.StepRequests = list("cpu", "-1"); return r },
			wantErr: "stepRequests cpu=-1 are not within requests cpu=2,pods=2",
		},
		"step headroom beyond the size": {
			pod:     boundRunner("r1-uid", "n1"),
			rec:     func(r Recorded) Recorded { r.StepRequests = list("cpu", "3"); return r },
			wantErr: "stepRequests cpu=3 are not within requests cpu=2,pods=2",
		},
		"step headroom of a resource the size lacks": {
			pod:     boundRunner("r1-uid", "n1"),
			rec:     func(r Recorded) Recorded { r.StepRequests = list("memory", "1Gi"); return r },
			wantErr: "stepRequests memory=1Gi are not within requests cpu=2,pods=2",
		},
		// The scheduler's units: 100 microcores are one millicore, as the
		// plugin holds them.
		"sub-millicore cpu counts as a millicore": {
			pod: boundRunner("r1-uid", "n1"),
			rec: func(r Recorded) Recorded {
				r.Requests, r.StepRequests, r.HostPorts = list("cpu", "100u"), list("cpu", "1m"), nil
				return r
			},
		},
		"unreadable host port": {
			pod:     boundRunner("r1-uid", "n1"),
			rec:     func(r Recorded) Recorded { r.HostPorts = []string{"6379/QUIC"}; return r },
			wantErr: `host port "6379/QUIC": protocol "QUIC" is not TCP, UDP or SCTP`,
		},
		"host port out of range": {
			pod:     boundRunner("r1-uid", "n1"),
			rec:     func(r Recorded) Recorded { r.HostPorts = []string{"70000"}; return r },
			wantErr: `host port "70000": want a port from 1 to 65535, optionally /TCP, /UDP or /SCTP`,
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			rec := good
			if tc.rec != nil {
				rec = tc.rec(rec)
			}
			ports, err := rec.Validate(tc.pod)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("Validate error (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPorts, ports); err == nil && diff != "" {
				t.Errorf("Validate ports (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	want := Recorded{Node: "n1", Requests: list("cpu", "2500m", "memory", "5Gi", "pods", "1"), Source: SourceHookTemplate,
		StepRequests: list("cpu", "500m", "pods", "1"), HostPorts: []string{"6379/TCP"}, StaleJob: "7",
		RunnerUID: "u1", StaleWorkflowPods: []types.UID{"w0"}}
	value, err := want.Encode()
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ReservationAnnotation: value}}}
	got, ok, err := RecordedReservation(pod)
	if !ok || err != nil {
		t.Fatalf("RecordedReservation = %v, %v", ok, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RecordedReservation (-want,+got):\n%s", diff)
	}
	again, _ := got.Encode()
	if again != value {
		t.Errorf("record changed in a round trip:\n%s\n%s", value, again)
	}
	if _, ok, _ := RecordedReservation(&v1.Pod{}); ok {
		t.Error("RecordedReservation found a record on a pod without one")
	}
	pod.Annotations[ReservationAnnotation] = "{"
	if _, ok, err := RecordedReservation(pod); !ok || err == nil || !strings.Contains(err.Error(), ReservationAnnotation) {
		t.Errorf("unreadable record: ok %v, err %v; want ok and an error naming the annotation", ok, err)
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]HostPort{
		"6379":      {Protocol: v1.ProtocolTCP, Port: 6379},
		"53/udp":    {Protocol: v1.ProtocolUDP, Port: 53},
		"9000/SCTP": {Protocol: v1.ProtocolSCTP, Port: 9000},
		"65535/tcp": {Protocol: v1.ProtocolTCP, Port: 65535},
	} {
		got, err := ParseHostPort(in)
		if err != nil || got != want {
			t.Errorf("ParseHostPort(%q) = %v, %v; want %v", in, got, err, want)
		}
		if again, err := ParseHostPort(got.String()); err != nil || again != got {
			t.Errorf("ParseHostPort(%q.String()) = %v, %v", in, again, err)
		}
	}
	for _, in := range []string{"", "0", "65536", "-1", "http", "80/QUIC", "80/"} {
		if got, err := ParseHostPort(in); err == nil {
			t.Errorf("ParseHostPort(%q) = %v, want an error", in, got)
		}
	}
}

func TestNames(t *testing.T) {
	if got := PlaceholderName("r1"); got != "r1-hold" {
		t.Errorf("PlaceholderName = %q", got)
	}
	if got := PairPodName("r1"); got != "r1-pair" {
		t.Errorf("PairPodName = %q", got)
	}
	// A name at the limit is cut so that the pod name stays valid: at most
	// 253 characters, not ending the stem in a dot or a dash.
	long := strings.Repeat("a", 248) + "-b.c"
	for _, got := range []string{PlaceholderName(long), PairPodName(long)} {
		if len(got) > 253 || strings.Contains(got, "--") || strings.Contains(got, ".-") {
			t.Errorf("name of a runner named %d characters: %q (%d characters)", len(long), got, len(got))
		}
	}
}

func controlled(label, ofAnnotation, runner string, owner *metav1.OwnerReference) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: runner + "-x",
		Labels: map[string]string{label: "true"}, Annotations: map[string]string{ofAnnotation: runner}}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return p
}

// A label alone makes neither a placeholder nor a pair pod: the runner pod
// it names must control it.
func TestIdentity(t *testing.T) {
	runner := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "r1", UID: "r1-uid"}}
	ctrl := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "r1", UID: "r1-uid", Controller: ptr.To(true)}
	testCases := map[string]struct {
		pod                      *v1.Pod
		placeholder, of, pairPod bool
	}{
		"placeholder": {pod: controlled(PlaceholderLabel, PlaceholderOfAnnotation, "r1", ctrl), placeholder: true, of: true},
		"placeholder of an earlier runner of the name": {
			pod:         controlled(PlaceholderLabel, PlaceholderOfAnnotation, "r1", &metav1.OwnerReference{Kind: "Pod", Name: "r1", UID: "old", Controller: ptr.To(true)}),
			placeholder: true,
		},
		"label only":               {pod: controlled(PlaceholderLabel, PlaceholderOfAnnotation, "r1", nil)},
		"owner but not controller": {pod: controlled(PlaceholderLabel, PlaceholderOfAnnotation, "r1", &metav1.OwnerReference{Kind: "Pod", Name: "r1", UID: "r1-uid"})},
		"controlled by another pod": {
			pod: controlled(PlaceholderLabel, PlaceholderOfAnnotation, "r1", &metav1.OwnerReference{Kind: "Pod", Name: "r2", UID: "r2-uid", Controller: ptr.To(true)}),
		},
		"controlled by a ReplicaSet": {
			pod: controlled(PlaceholderLabel, PlaceholderOfAnnotation, "r1", &metav1.OwnerReference{Kind: "ReplicaSet", Name: "r1", UID: "r1-uid", Controller: ptr.To(true)}),
		},
		"pair pod":            {pod: controlled(PairPodLabel, PairOfAnnotation, "r1", ctrl), pairPod: true},
		"pair pod label only": {pod: controlled(PairPodLabel, PairOfAnnotation, "r1", nil)},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if got := IsPlaceholder(tc.pod); got != tc.placeholder {
				t.Errorf("IsPlaceholder = %v, want %v", got, tc.placeholder)
			}
			if got := IsPlaceholderOf(tc.pod, runner); got != tc.of {
				t.Errorf("IsPlaceholderOf = %v, want %v", got, tc.of)
			}
			if got := IsPairPod(tc.pod); got != tc.pairPod {
				t.Errorf("IsPairPod = %v, want %v", got, tc.pairPod)
			}
		})
	}
}

func TestEphemeralRunnerJob(t *testing.T) {
	for name, tc := range map[string]struct {
		status map[string]any
		want   string
	}{
		"no status":       {},
		"job id":          {status: map[string]any{"jobId": "abc", "jobRequestId": int64(7)}, want: "abc"},
		"request id":      {status: map[string]any{"jobRequestId": int64(7)}, want: "7"},
		"empty job id":    {status: map[string]any{"jobId": "", "jobRequestId": int64(7)}, want: "7"},
		"zero request id": {status: map[string]any{"jobRequestId": int64(0)}},
	} {
		t.Run(name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.status != nil {
				obj.Object["status"] = tc.status
			}
			if got := EphemeralRunnerJob(obj); got != tc.want {
				t.Errorf("EphemeralRunnerJob = %q, want %q", got, tc.want)
			}
		})
	}
}
