//go:build !tandem_k8s_ge_1_37

package inprocess

import (
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/scheduler"
)

// newInformerFactory is kube-scheduler's informer factory, without resync.
func newInformerFactory(client kubernetes.Interface) informers.SharedInformerFactory {
	return scheduler.NewInformerFactory(client, 0)
}
