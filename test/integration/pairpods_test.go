package integration

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/contract"
)

// A runner that the node would take alone but not with its workflow pod:
// the shipped configuration keeps a pending pod of the pair's size for
// cluster autoscalers, which the scheduler marks Unschedulable (what an
// autoscaler looks for) and never binds; it goes once the runner is bound.
func TestPairPodWhileRunnerWaitsForPairRoom(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"pp-n1": "3"})
	e.runner("r1", "1", "1")
	e.bound("r1")
	// 3 - (1 + 1) = 1 cpu: r2 alone fits, with its workflow pod it does not.
	e.runner("r2", "1", "1")
	wantContains(t, "r2's PodScheduled message", e.unschedulable("r2"), contract.ErrReasonPairDoesNotFit)

	pair := "r2-pair"
	e.poll("pair pod "+pair+" exists", func() (bool, error) {
		_, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, pair, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	wantContains(t, pair+"'s PodScheduled message", e.unschedulable(pair), "never bound")
	p := e.get(pair)
	if got := p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("pair pod requests cpu %s, want 2 (runner 1 + workflow pod 1)", got.String())
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != e.get("r2").UID {
		t.Errorf("pair pod's controller = %+v, want runner r2", ref)
	}
	wantContains(t, "r2's "+contract.ReasonPairPodCreated+" event", e.event("r2", contract.ReasonPairPodCreated), pair, "cpu=2")

	e.delete("r1")
	e.bound("r2")
	e.poll("pair pod "+pair+" is deleted", func() (bool, error) {
		_, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, pair, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
