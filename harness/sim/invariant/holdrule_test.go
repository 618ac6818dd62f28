package invariant

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tandem-scheduler/tandem/contract/holdruletest"
)

// The shared table of the hold rule (contract/holdruletest), which the
// plugin and kubectl-tandem run too: the checker watches the runner and its
// pods come, and what it counts as reserved on n1 is what the reservation
// takes from the node.
func TestHoldRuleTable(t *testing.T) {
	for _, tc := range holdruletest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			c := New(fixedClock{}, nil, holdruletest.RunnerPodLabel)
			c.AddNode(holdruletest.Node, v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110")})
			c.observeJob(holdruletest.Job())
			c.observe(tc.RunnerPod(), false)
			for _, p := range tc.Objects() {
				c.observe(p, false)
			}
			if tc.NoWorkflowPod {
				c.releaseWithoutWorkflowPod(holdruletest.RunnerUID)
			}
			samples := c.Samples()[holdruletest.Node]
			if len(samples) == 0 {
				t.Fatal("no sample of n1")
			}
			last := samples[len(samples)-1]
			got := v1.ResourceList{
				v1.ResourceCPU:    *resource.NewMilliQuantity(last.ReservedMilli, resource.DecimalSI),
				v1.ResourceMemory: *resource.NewQuantity(last.ReservedMemory, resource.BinarySI),
			}
			if same, shown := holdruletest.Same(got, tc.Held); !same {
				t.Errorf("holds %q, want %q", shown, tc.Held)
			}
			if v := c.Violations(); len(v) > 0 {
				t.Errorf("violations on a node with room for everything: %v", v)
			}
		})
	}
}
