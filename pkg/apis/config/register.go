package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// GroupName is the group name used in this package.
const GroupName = schedconfig.GroupName

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

var (
	// localSchemeBuilder extends kube-scheduler's internal SchemeBuilder, so
	// that our args are known wherever the in-tree args are, including the
	// scheme kube-scheduler uses to convert plugin args.
	localSchemeBuilder = &schedconfig.SchemeBuilder
	// AddToScheme is a global function that registers this API group & version to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes)
}

// addKnownTypes registers known types to the given scheme.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&WorkflowReservationArgs{},
	)
	return nil
}
