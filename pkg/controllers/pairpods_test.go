package controllers

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/contract"
	configv1 "github.com/tandem-scheduler/tandem/pkg/apis/config/v1"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// Extended resources cannot be requested without an equal limit: the
// apiserver would refuse a pair pod for a GPU runner.
func TestPairPodLimitsEqualRequests(t *testing.T) {
	runner := runnerPod("gpu").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", "nvidia.com/gpu": "1"}).Obj()
	pair := PairPodFor(runner, reservations.PodAmount(runner), contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}), nil, "pause:3.10")
	res := pair.Spec.Containers[0].Resources
	if len(res.Requests) == 0 {
		t.Fatal("pair pod requests nothing")
	}
	for name, q := range res.Requests {
		if l, ok := res.Limits[name]; !ok || l.Cmp(q) != 0 {
			t.Errorf("pair pod %s: limit %v, request %s; want equal", name, res.Limits[name], q.String())
		}
	}
	if q := res.Requests["nvidia.com/gpu"]; q.Value() != 1 {
		t.Errorf("pair pod requests nvidia.com/gpu %s, want 1", q.String())
	}
}

// A pair pod that shows up after its runner was bound (its Create raced
// with the bind) goes at once, not at the next sweep.
func TestPairPodCreatedAfterBindIsDeleted(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Req(units("1")).Node("n1").Obj()
	_, c := newTestFeeder(t, withArgs(pairArgs()), withObjects(runner))
	late := PairPodFor(runner, reservations.PodAmount(runner), contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}), nil, configv1.DefaultPlaceholderImage)
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
	leaked := PairPodFor(gone, reservations.PodAmount(gone), contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}), nil, configv1.DefaultPlaceholderImage)
	f, c := newTestFeeder(t, withArgs(pairArgs()), withObjects(leaked))
	f.Reconcile(ctx)
	waitForPod(t, c, leaked.Name, func(p *v1.Pod) bool { return p == nil })
}
