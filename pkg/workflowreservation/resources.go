package workflowreservation

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// amountOfPodInfo is the pod's effective request as the scheduler's
// NodeInfo computed and cached it, plus one pod.
func amountOfPodInfo(pi fwk.PodInfo) contract.Amount {
	r := pi.CalculateResource().Resource
	a := contract.Amount{MilliCPU: r.GetMilliCPU(), Memory: r.GetMemory(), EphemeralStorage: r.GetEphemeralStorage(), Pods: 1}
	if sc := r.GetScalarResources(); len(sc) > 0 {
		a.Scalar = make(map[v1.ResourceName]int64, len(sc))
		for n, v := range sc {
			a.Scalar[n] = v
		}
	}
	return a
}

// fits reports whether need fits into the node's free room once reserved
// is also taken away, for every resource need asks for, pods included. An
// extended resource the node's allocatable does not list and a DeviceClass
// maps to DRA devices (dra) fits where enough of its devices are free; a
// pod's own request of one (dra.own) is left to the DynamicResources
// plugin where nothing of it is held.
func fits(need, reserved contract.Amount, nodeInfo fwk.NodeInfo, dra *draRoom) bool {
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
		allocatable := alloc.GetScalarResources()[name]
		if allocatable == 0 && dra.maps(name) {
			if dra.own && reserved.Scalar[name] == 0 {
				continue // nothing held of it here: DynamicResources judges the pod's own request
			}
			free, _ := dra.free(nodeInfo.Node(), name)
			if !fit(want, free, 0, reserved.Scalar[name]) {
				return false
			}
			continue
		}
		if !fit(want, allocatable, used.GetScalarResources()[name], reserved.Scalar[name]) {
			return false
		}
	}
	return true
}

// nonZeroRequest is the pod's request as NodeResourcesFit scores it: a
// container without a cpu or memory request counts as the scheduler's
// defaults (100m, 200Mi), so that best-effort pods rank nodes as they
// would without tandem.
func nonZeroRequest(pod *v1.Pod) contract.Amount {
	a := contract.AmountFromList(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		NonMissingContainerRequests: v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(schedutil.DefaultMilliCPURequest, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(schedutil.DefaultMemoryRequest, resource.DecimalSI),
		},
	}))
	a.Pods = 1
	return a
}
