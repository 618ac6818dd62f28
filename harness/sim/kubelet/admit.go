//go:build !tandem_k8s_ge_1_37

package kubelet

import (
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
)

// admit runs h on attrs.
func admit(h lifecycle.PodAdmitHandler, attrs *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	return h.Admit(attrs)
}
