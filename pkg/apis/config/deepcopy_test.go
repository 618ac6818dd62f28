package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWorkflowReservationArgsDeepCopy(t *testing.T) {
	tests := map[string]struct {
		args *WorkflowReservationArgs
	}{
		"nil": {},
		"empty": {
			args: &WorkflowReservationArgs{},
		},
		"all fields": {
			args: &WorkflowReservationArgs{
				RunnerSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "runner"}},
				RunnerPodLabel:          "runner-pod",
				DefaultWorkflowRequests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
				DefaultStepRequests:     v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			want := tc.args.DeepCopy()
			got := tc.args.DeepCopyObject()
			if tc.args == nil {
				if got != nil {
					t.Fatalf("DeepCopyObject() of nil = %v, want nil", got)
				}
				return
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("unexpected copy (-want,+got):\n%s", diff)
			}
			// Mutating the copy must not affect the original.
			c := got.(*WorkflowReservationArgs)
			if c.RunnerSelector != nil {
				c.RunnerSelector.MatchLabels["app"] = "changed"
			}
			if c.DefaultWorkflowRequests != nil {
				c.DefaultWorkflowRequests[v1.ResourceCPU] = resource.MustParse("2")
			}
			if diff := cmp.Diff(want, tc.args); diff != "" {
				t.Errorf("original changed by mutating the copy (-want,+got):\n%s", diff)
			}
		})
	}
}
