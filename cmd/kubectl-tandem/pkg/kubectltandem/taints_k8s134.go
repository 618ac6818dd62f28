//go:build tandem_k8s_1_34

package kubectltandem

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// untoleratedTaint is the first taint of taints that passes filter and that
// tolerations do not tolerate. 1.34's helper takes no logger and has no
// comparison operators.
func untoleratedTaint(_ klog.Logger, taints []v1.Taint, tolerations []v1.Toleration, filter func(*v1.Taint) bool) (v1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(taints, tolerations, filter)
}

// toleratesTaint reports whether tolerations tolerate taint.
func toleratesTaint(_ klog.Logger, tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(tolerations, taint)
}
