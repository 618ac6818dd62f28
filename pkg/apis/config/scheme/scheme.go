// Package scheme registers the tandem plugin args with kube-scheduler's
// config scheme. Import it for its side effect:
//
//	import _ "github.com/tandem-scheduler/tandem/pkg/apis/config/scheme"
//
// after which a KubeSchedulerConfiguration loaded by kube-scheduler decodes,
// defaults and converts the args of our plugins into the internal types in
// github.com/tandem-scheduler/tandem/pkg/apis/config.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	configv1 "github.com/tandem-scheduler/tandem/pkg/apis/config/v1"
)

func init() {
	AddToScheme(kubeschedulerscheme.Scheme)
}

// AddToScheme adds the internal and v1 versions of the tandem plugin args to
// scheme. Because our types extend kube-scheduler's SchemeBuilders, this also
// (re)registers the in-tree kubescheduler.config.k8s.io types.
func AddToScheme(scheme *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(scheme))
	utilruntime.Must(configv1.AddToScheme(scheme))
}
