package integration

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
)

// Issue 20: where ARC is installed, a pod is a runner only if its
// EphemeralRunner controls it. Runner labels alone make an ordinary pod that
// holds nothing; an owner reference anyone can write, naming an
// EphemeralRunner that does not exist with that UID, makes a pod that waits
// and says why.
func TestOnlyARCsRunnersHoldRoom(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"tr-n1": "4"})
	asks := map[string]string{contract.WorkflowRequestsAnnotation: "cpu=2500m"}
	e.create("forged-owner", podSpec{cpu: "500m", runner: true, notARC: true, annotations: asks, mutate: func(pod *v1.Pod) {
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "actions.github.com/v1alpha1", Kind: contract.EphemeralRunnerKind, Name: pod.Name, UID: "forged", Controller: ptr.To(true),
		}}
	}})
	// The first cycle may run before the EphemeralRunners are listed, and
	// say so: wait for the message that names the forged owner.
	e.unschedulableSaying("forged-owner", "is not listed (yet) with that UID")

	e.create("labels-only", podSpec{cpu: "500m", runner: true, notARC: true, annotations: asks})
	e.bound("labels-only")
	wantContains(t, "labels-only's warning", e.event("labels-only", contract.ReasonNotAnEphemeralRunner), "no EphemeralRunner of ARC controls it")
	if _, recorded := e.get("labels-only").Annotations[contract.ReservationAnnotation]; recorded {
		t.Error("labels-only carries a reservation record")
	}
	// 3.5 cpu are free: nothing is held for labels-only's 2.5.
	e.create("other", podSpec{cpu: "3"})
	if got := e.bound("other"); got != "tr-n1" {
		t.Errorf("other landed on %q", got)
	}
}
