//go:build tandem_k8s_ge_1_37

package kubelet

import (
	"context"

	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
)

// admit runs h on attrs; from 1.37 admission takes a context.
func admit(h lifecycle.PodAdmitHandler, attrs *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	return h.Admit(context.TODO(), attrs)
}
