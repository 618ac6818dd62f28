package reservations

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tandem-scheduler/tandem/contract"
)

// PodAmount is the pod's effective request as the scheduler computes it
// (containers, init containers, overhead, pod-level resources), plus one pod.
func PodAmount(pod *v1.Pod) contract.Amount {
	a := contract.AmountFromList(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	a.Pods = 1
	return a
}
