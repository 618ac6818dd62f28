//go:build !tandem_k8s_1_34

package kubectltandem

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// untoleratedTaint is the first taint of taints that passes filter and that
// tolerations do not tolerate, as the scheduler's TaintToleration plugin
// finds it (comparison operators off, their default).
func untoleratedTaint(logger klog.Logger, taints []v1.Taint, tolerations []v1.Toleration, filter func(*v1.Taint) bool) (v1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(logger, taints, tolerations, filter, false)
}

// toleratesTaint reports whether tolerations tolerate taint.
func toleratesTaint(logger klog.Logger, tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(logger, tolerations, taint, false)
}
