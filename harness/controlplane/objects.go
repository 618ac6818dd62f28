package controlplane

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DefaultNodePods is the "pods" capacity CreateNode gives a Node whose
// capacity does not name one (the kubelet's default --max-pods). Without it
// the scheduler's NodeResourcesFit rejects every pod with "Too many pods".
const DefaultNodePods = 110

// CreateNode creates a Node as a kubelet would register it, with no kubelet
// behind it: status capacity and allocatable both set to capacity (plus
// DefaultNodePods pods unless capacity names "pods"), a Ready condition, and
// the kubernetes.io/hostname label in addition to labels.
func CreateNode(ctx context.Context, client kubernetes.Interface, name string, capacity v1.ResourceList, labels map[string]string) (*v1.Node, error) {
	nodeLabels := map[string]string{}
	for k, v := range labels {
		nodeLabels[k] = v
	}
	nodeLabels[v1.LabelHostname] = name
	capacity = capacity.DeepCopy()
	if capacity == nil {
		capacity = v1.ResourceList{}
	}
	if _, ok := capacity[v1.ResourcePods]; !ok {
		capacity[v1.ResourcePods] = *resource.NewQuantity(DefaultNodePods, resource.DecimalSI)
	}
	now := metav1.Now()
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels},
		Status: v1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Conditions: []v1.NodeCondition{{
				Type:               v1.NodeReady,
				Status:             v1.ConditionTrue,
				Reason:             "KubeletReady",
				Message:            "created by controlplane.CreateNode",
				LastHeartbeatTime:  now,
				LastTransitionTime: now,
			}},
			Phase: v1.NodeRunning,
		},
	}
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating node %s: %w", name, err)
	}
	if len(created.Status.Capacity) > 0 && len(created.Status.Conditions) > 0 {
		return created, nil
	}
	// Some apiserver versions drop status on create: set it through the
	// status subresource.
	created.Status = node.Status
	updated, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting status of node %s: %w", name, err)
	}
	return updated, nil
}

// EnsureNamespace creates the namespace unless it exists.
func EnsureNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	if _, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("getting namespace %s: %w", name, err)
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
