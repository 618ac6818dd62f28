package controllers

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/contract"
	configv1 "github.com/tandem-scheduler/tandem/pkg/apis/config/v1"
	"github.com/tandem-scheduler/tandem/pkg/controllers/pairpod"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// A pair pod that shows up after its runner was bound (its Create raced
// with the bind) goes at once, not at the next sweep.
func TestPairPodCreatedAfterBindIsDeleted(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Req(units("1")).Node("n1").Obj()
	_, c := newTestFeeder(t, withArgs(pairArgs()), withObjects(runner))
	late := pairpod.For(runner, reservations.PodAmount(runner), contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}), nil, configv1.DefaultPlaceholderImage)
	if _, err := c.client.CoreV1().Pods("arc").Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, c, late.Name, func(p *v1.Pod) bool { return p == nil })
}

// Pair pods whose runner went while no replica led (or whose delete was
// lost) are swept by the reconciler.
func TestReconcilerSweepsLeakedPairPods(t *testing.T) {
	ctx := context.Background()
	gone := runnerPod("gone").Obj()
	leaked := pairpod.For(gone, reservations.PodAmount(gone), contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}), nil, configv1.DefaultPlaceholderImage)
	f, c := newTestFeeder(t, withArgs(pairArgs()), withObjects(leaked))
	f.Reconcile(ctx)
	waitForPod(t, c, leaked.Name, func(p *v1.Pod) bool { return p == nil })
}
