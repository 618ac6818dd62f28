package workflowreservation

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/contract/holdruletest"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// The shared table of the hold rule (contract/holdruletest), which the
// invariant checker and kubectl-tandem run too: the plugin's informer
// handlers see the runner and its pods as the API delivers them, and Filter's
// reading of the node (reservedOn) is what the reservation takes from n1.
func TestHoldRuleTable(t *testing.T) {
	big := st.MakeNode().Name(holdruletest.Node).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}).Obj()
	for _, tc := range holdruletest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			logger := klogger(t)
			runner := tc.RunnerPod()
			runner.Spec.SchedulerName = "test"
			pods := tc.Objects()
			// A scheduler that starts with the runner and its pods in the
			// API: its informers list them in any order, its handlers
			// rebuild the reservation, its first reconcile repairs what
			// they cannot see (a workflow pod that finished).
			objs := []runtime.Object{big, holdruletest.Job(), runner}
			for _, p := range pods {
				objs = append(objs, p)
			}
			pl, _ := newTestPlugin(t, defaultArgs(), true, objs...)
			key := types.NamespacedName{Namespace: holdruletest.Namespace, Name: holdruletest.Runner}
			if _, ok := pl.store.Get(key); !ok {
				t.Fatal("the runner's record was not rebuilt")
			}
			if tc.NoWorkflowPod {
				feederOf(pl).ReleaseWithoutWorkflowPod(logger, key, holdruletest.RunnerUID)
			}
			onNode := []*v1.Pod{runner}
			var placeholder contract.Amount
			for i, p := range pods {
				if p.Spec.NodeName != holdruletest.Node || contract.IsTerminal(p) {
					continue
				}
				onNode = append(onNode, p)
				if tc.Pods[i].Role == holdruletest.Placeholder {
					placeholder = placeholder.Add(reservations.PodAmount(p))
				}
			}
			held := pl.reservedOn(&cycleState{kind: kindOther}, nodeInfo(big, onNode...))
			// The node counts its placeholder's requests already; the table
			// counts them in the reservation.
			got := held.Amount.Add(placeholder).ToList()
			if same, shown := holdruletest.Same(got, tc.Held); !same {
				t.Errorf("holds %q, want %q", shown, tc.Held)
			}
			var ports []string
			for _, p := range held.Ports {
				ports = append(ports, p.String())
			}
			if !slices.Equal(ports, tc.HeldPorts) {
				t.Errorf("holds host ports %v, want %v", ports, tc.HeldPorts)
			}
		})
	}
}
