package arc

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestPrepareOutcome(t *testing.T) {
	phase := func(p v1.PodPhase, reason string) *v1.Pod {
		return &v1.Pod{Status: v1.PodStatus{Phase: p, Reason: reason}}
	}
	tests := map[string]struct {
		pod        *v1.Pod
		waited     time.Duration
		want       Prepare
		wantReason string
	}{
		"Running: the job runs":                  {pod: phase(v1.PodRunning, ""), waited: time.Second, want: Ready},
		"Pending within the timeout: wait":       {pod: phase(v1.PodPending, ""), waited: 599 * time.Second, want: Waiting},
		"Pending at the timeout: job fails":      {pod: phase(v1.PodPending, ""), waited: 600 * time.Second, want: Failed, wantReason: ReasonPrepareJobTimeout},
		"rejected by the kubelet: fails at once": {pod: phase(v1.PodFailed, "OutOfcpu"), want: Failed, wantReason: "OutOfcpu"},
		"Succeeded is not Running: fails":        {pod: phase(v1.PodSucceeded, ""), want: Failed, wantReason: "Succeeded"},
		"Unknown: fails":                         {pod: phase(v1.PodUnknown, ""), want: Failed, wantReason: "Unknown"},
		"pod gone: fails":                        {pod: nil, want: Failed, wantReason: ReasonWorkflowPodGone},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, reason := PrepareOutcome(tc.pod, tc.waited, DefaultPrepareJobTimeout)
			if diff := cmp.Diff([]any{tc.want, tc.wantReason}, []any{got, reason}); diff != "" {
				t.Errorf("PrepareOutcome (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPrepareJobTimeout(t *testing.T) {
	tests := map[string]struct {
		env  []v1.EnvVar
		want time.Duration
	}{
		"unset: 600s":   {want: 600 * time.Second},
		"set":           {env: []v1.EnvVar{{Name: EnvPrepareJobTimeout, Value: "120"}}, want: 120 * time.Second},
		"garbage: 600s": {env: []v1.EnvVar{{Name: EnvPrepareJobTimeout, Value: "2m"}}, want: 600 * time.Second},
		"zero: 600s":    {env: []v1.EnvVar{{Name: EnvPrepareJobTimeout, Value: "0"}}, want: 600 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := PrepareJobTimeout(boundRunner("r", tc.env...)); got != tc.want {
				t.Errorf("PrepareJobTimeout = %v, want %v", got, tc.want)
			}
		})
	}
}
