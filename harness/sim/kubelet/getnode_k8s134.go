//go:build tandem_k8s_1_34

package kubelet

import (
	v1 "k8s.io/api/core/v1"
)

// nodeGetter is the kubelet's "get my node" function for admission,
// answering node; in 1.34 it takes no context and no cache flag.
func nodeGetter(node *v1.Node) func() (*v1.Node, error) {
	return func() (*v1.Node, error) { return node, nil }
}
