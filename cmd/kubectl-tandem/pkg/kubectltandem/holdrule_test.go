package kubectltandem

import (
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/tandem-scheduler/tandem/contract/holdruletest"
)

// The shared table of the hold rule (contract/holdruletest), which the plugin and the invariant
// checker run too: what kubectl-tandem reads from the API as the room the
// runner's reservation holds on n1.
func TestHoldRuleTable(t *testing.T) {
	for _, tc := range holdruletest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			pods := append([]*v1.Pod{tc.RunnerPod()}, tc.Objects()...)
			s := snapshot(nil, pods, []*batchv1.Job{holdruletest.Job()})
			var found []Reservation
			for _, r := range (AnnotationSource{}).Reservations(s) {
				if r.Runner == holdruletest.Runner {
					found = append(found, r)
				}
			}
			if len(found) != 1 {
				t.Fatalf("found %d reservations of runner %s, want 1", len(found), holdruletest.Runner)
			}
			r := found[0]
			if r.Invalid != "" {
				t.Fatalf("the record holds nothing: %s", r.Invalid)
			}
			want, wantPorts := tc.Held, tc.HeldPorts
			if tc.KubectlTandemHeld != "" {
				// What kubectl-tandem cannot know: tc.KubectlTandemWhy.
				want, wantPorts = tc.KubectlTandemHeld, tc.KubectlTandemHeldPorts
			}
			if same, shown := holdruletest.Same(r.Holds, want); !same {
				t.Errorf("holds %q, want %q", shown, want)
			}
			if !slices.Equal(r.HeldPorts, wantPorts) {
				t.Errorf("holds host ports %v, want %v", r.HeldPorts, wantPorts)
			}
		})
	}
}
