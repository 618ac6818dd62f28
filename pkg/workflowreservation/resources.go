package workflowreservation

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// amountOfPodInfo is the pod's effective request as the scheduler's
// NodeInfo computed and cached it, plus one pod.
func amountOfPodInfo(pi fwk.PodInfo) reservations.Amount {
	r := pi.CalculateResource().Resource
	a := reservations.Amount{MilliCPU: r.GetMilliCPU(), Memory: r.GetMemory(), EphemeralStorage: r.GetEphemeralStorage(), Pods: 1}
	if sc := r.GetScalarResources(); len(sc) > 0 {
		a.Scalar = make(map[v1.ResourceName]int64, len(sc))
		for n, v := range sc {
			a.Scalar[n] = v
		}
	}
	return a
}

// fits reports whether need fits into the node's free room once reserved
// is also taken away, for every resource need asks for, pods included.
func fits(need, reserved reservations.Amount, nodeInfo fwk.NodeInfo) bool {
	alloc, used := nodeInfo.GetAllocatable(), nodeInfo.GetRequested()
	fit := func(want, allocatable, requested, held int64) bool {
		return want <= 0 || want <= allocatable-requested-held
	}
	if !fit(need.Pods, int64(alloc.GetAllowedPodNumber()), int64(len(nodeInfo.GetPods())), reserved.Pods) ||
		!fit(need.MilliCPU, alloc.GetMilliCPU(), used.GetMilliCPU(), reserved.MilliCPU) ||
		!fit(need.Memory, alloc.GetMemory(), used.GetMemory(), reserved.Memory) ||
		!fit(need.EphemeralStorage, alloc.GetEphemeralStorage(), used.GetEphemeralStorage(), reserved.EphemeralStorage) {
		return false
	}
	for name, want := range need.Scalar {
		if !fit(want, alloc.GetScalarResources()[name], used.GetScalarResources()[name], reserved.Scalar[name]) {
			return false
		}
	}
	return true
}
