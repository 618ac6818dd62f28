package contract

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClaimOrder: the oldest claims; in one second the hook's workflow pod
// goes before a step pod that sorts first by name.
func TestClaimOrder(t *testing.T) {
	pod := func(name string, sec int64) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0)}}
	}
	tests := map[string]struct {
		pods []*v1.Pod
		want []string
	}{
		"older first": {
			pods: []*v1.Pod{pod("r1-workflow", 20), pod("r1-step-0a1b", 10)},
			want: []string{"r1-step-0a1b", "r1-workflow"},
		},
		"same second: the workflow pod first": {
			pods: []*v1.Pod{pod("r1-step-0a1b", 10), pod("r1-workflow", 10), pod("r1-step-9f8e", 10)},
			want: []string{"r1-workflow", "r1-step-0a1b", "r1-step-9f8e"},
		},
		"same second, no workflow pod: by name": {
			pods: []*v1.Pod{pod("r1-step-b", 10), pod("r1-step-a", 10)},
			want: []string{"r1-step-a", "r1-step-b"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			slices.SortFunc(tc.pods, ClaimOrder)
			var got []string
			for _, p := range tc.pods {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}
