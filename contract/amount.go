package contract

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Amount is a bundle of resources in the units the scheduler accounts in:
// millicores for cpu, bytes for memory and storage, a count for pods and
// extended resources.
type Amount struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	Pods             int64
	Scalar           map[v1.ResourceName]int64
}

// AmountFromList converts a ResourceList. Resources the scheduler does not
// account for (e.g. hugepages are scalar and kept; unknown native names are
// kept as scalar too) are carried along so nothing is silently dropped.
func AmountFromList(rl v1.ResourceList) Amount {
	var a Amount
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			a.MilliCPU = q.MilliValue()
		case v1.ResourceMemory:
			a.Memory = q.Value()
		case v1.ResourceEphemeralStorage:
			a.EphemeralStorage = q.Value()
		case v1.ResourcePods:
			a.Pods = q.Value()
		default:
			if q.Sign() == 0 {
				continue // asks for nothing; kept, one name per runner would grow every sum
			}
			if a.Scalar == nil {
				a.Scalar = map[v1.ResourceName]int64{}
			}
			a.Scalar[name] = q.Value()
		}
	}
	return a
}

// Add returns a+b.
func (a Amount) Add(b Amount) Amount {
	out := Amount{
		MilliCPU:         a.MilliCPU + b.MilliCPU,
		Memory:           a.Memory + b.Memory,
		EphemeralStorage: a.EphemeralStorage + b.EphemeralStorage,
		Pods:             a.Pods + b.Pods,
	}
	if len(a.Scalar)+len(b.Scalar) > 0 {
		out.Scalar = make(map[v1.ResourceName]int64, len(a.Scalar)+len(b.Scalar))
		for n, v := range a.Scalar {
			out.Scalar[n] += v
		}
		for n, v := range b.Scalar {
			out.Scalar[n] += v
		}
	}
	return out
}

// Sub returns a-b.
func (a Amount) Sub(b Amount) Amount { return a.Add(b.Scale(-1)) }

// AtLeastZero returns a with every negative resource raised to zero.
func (a Amount) AtLeastZero() Amount {
	out := Amount{MilliCPU: max(a.MilliCPU, 0), Memory: max(a.Memory, 0), EphemeralStorage: max(a.EphemeralStorage, 0), Pods: max(a.Pods, 0)}
	if len(a.Scalar) > 0 {
		out.Scalar = make(map[v1.ResourceName]int64, len(a.Scalar))
		for n, v := range a.Scalar {
			out.Scalar[n] = max(v, 0)
		}
	}
	return out
}

// AtMost returns a with every resource lowered to b's where b has less.
func (a Amount) AtMost(b Amount) Amount {
	out := Amount{MilliCPU: min(a.MilliCPU, b.MilliCPU), Memory: min(a.Memory, b.Memory), EphemeralStorage: min(a.EphemeralStorage, b.EphemeralStorage), Pods: min(a.Pods, b.Pods)}
	if len(a.Scalar) > 0 {
		out.Scalar = make(map[v1.ResourceName]int64, len(a.Scalar))
		for n, v := range a.Scalar {
			out.Scalar[n] = min(v, b.Scalar[n])
		}
	}
	return out
}

// Scale returns a multiplied by k.
func (a Amount) Scale(k int64) Amount {
	out := Amount{MilliCPU: a.MilliCPU * k, Memory: a.Memory * k, EphemeralStorage: a.EphemeralStorage * k, Pods: a.Pods * k}
	if len(a.Scalar) > 0 {
		out.Scalar = make(map[v1.ResourceName]int64, len(a.Scalar))
		for n, v := range a.Scalar {
			out.Scalar[n] = v * k
		}
	}
	return out
}

// Equal reports whether a and b ask for the same of every resource.
func (a Amount) Equal(b Amount) bool {
	return a.Sub(b).IsZero()
}

// IsZero reports whether no resource is requested.
func (a Amount) IsZero() bool {
	if a.MilliCPU != 0 || a.Memory != 0 || a.EphemeralStorage != 0 || a.Pods != 0 {
		return false
	}
	for _, v := range a.Scalar {
		if v != 0 {
			return false
		}
	}
	return true
}

// Negative reports whether any resource is below zero.
func (a Amount) Negative() bool {
	if a.MilliCPU < 0 || a.Memory < 0 || a.EphemeralStorage < 0 || a.Pods < 0 {
		return true
	}
	for _, v := range a.Scalar {
		if v < 0 {
			return true
		}
	}
	return false
}

// ToList converts back to a ResourceList, leaving out zero entries.
func (a Amount) ToList() v1.ResourceList {
	rl := v1.ResourceList{}
	if a.MilliCPU != 0 {
		rl[v1.ResourceCPU] = *resource.NewMilliQuantity(a.MilliCPU, resource.DecimalSI)
	}
	if a.Memory != 0 {
		rl[v1.ResourceMemory] = *resource.NewQuantity(a.Memory, resource.BinarySI)
	}
	if a.EphemeralStorage != 0 {
		rl[v1.ResourceEphemeralStorage] = *resource.NewQuantity(a.EphemeralStorage, resource.BinarySI)
	}
	if a.Pods != 0 {
		rl[v1.ResourcePods] = *resource.NewQuantity(a.Pods, resource.DecimalSI)
	}
	for n, v := range a.Scalar {
		if v != 0 {
			rl[n] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	return rl
}

// String renders the amount the way users write it in the annotation:
// "cpu=1,memory=2Gi", sorted by name. The pod count is left out: every
// workflow pod is one pod.
func (a Amount) String() string {
	rl := a.ToList()
	delete(rl, v1.ResourcePods)
	return FormatResources(rl)
}
