package controllers

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
)

func runnerPod(name string) *st.PodWrapper {
	return st.MakePod().Namespace("arc").Name(name).UID(name).SchedulerName("test").Label("actions-ephemeral-runner", "True")
}

func units(cpu string) map[v1.ResourceName]string {
	return map[v1.ResourceName]string{v1.ResourceCPU: cpu}
}

// placeholderOf builds runner's placeholder holding cpu on n1, as the worker
// would.
func placeholderOf(runner *v1.Pod, cpu string) *v1.Pod {
	p := PlaceholderFor(runner, "n1", contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}), "pause:3.10")
	p.UID = types.UID(p.Name)
	return p
}
