package contract

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Issue 20: a zero-valued extended resource, under a new name per runner,
// grew every sum (the store's tally, the reserved-resources gauge's series)
// without bound. It asks for nothing and is not kept.
func TestAmountFromListDropsZeroScalars(t *testing.T) {
	a := AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), "example.com/r7": resource.MustParse("0"), "example.com/gpu": resource.MustParse("1")})
	if _, kept := a.Scalar["example.com/r7"]; kept || a.Scalar["example.com/gpu"] != 1 || len(a.Scalar) != 1 {
		t.Errorf("scalars = %v, want example.com/gpu=1 only", a.Scalar)
	}
}
