package pairpod

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/internal/tandemtest"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// Extended resources cannot be requested without an equal limit: the
// apiserver would refuse a pair pod for a GPU runner.
func TestPairPodLimitsEqualRequests(t *testing.T) {
	runner := tandemtest.RunnerPod("gpu").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", "nvidia.com/gpu": "1"}).Obj()
	pair := For(runner, reservations.PodAmount(runner), contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}), nil, "pause:3.10")
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
