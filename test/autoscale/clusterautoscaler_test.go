package autoscale

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/harness/clusterautoscaler"
)

// TestClusterAutoscalerNodeRegisters is the simulator's half of a node that
// Cluster Autoscaler's KWOK provider launches (the autoscaler itself cannot
// be built in CI; its runs are in docs/autoscaling-lab.md): a Node made from a
// node group's template, named and marked as the provider marks the nodes it
// creates, has the not-ready taint and no hostname, and nothing adopts it;
// Register gives it its hostname and removes the taint, and the kubelet
// emulator then reports it Ready. Register never applies to a node that
// changed, went, or was created again under its name since it was read (its
// resourceVersion differs).
func TestClusterAutoscalerNodeRegisters(t *testing.T) {
	ctx := t.Context()
	node := clusterautoscaler.NodeGroup{CPUs: 4, MemoryPerCPU: 2 << 30, Max: 3}.Template()
	node.Name = "c-4x-regst"
	node.Annotations[clusterautoscaler.ManagedAnnotation] = "fake"
	node.Annotations[clusterautoscaler.NodeGroupAnnotation] = "c-4x"
	node.Spec.ProviderID = "kwok:" + node.Name
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// t.Context() is done before cleanups run.
	t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	if !clusterautoscaler.IsClusterAutoscalerNode(created) || clusterautoscaler.Registered(created) {
		t.Fatalf("created node: provider's %v, registered %v; want the provider's, not registered", clusterautoscaler.IsClusterAutoscalerNode(created), clusterautoscaler.Registered(created))
	}
	if got := created.Status.Allocatable.Cpu().MilliValue(); got != 3900 {
		t.Errorf("allocatable cpu %dm, want 3900m: the apiserver kept the template's status", got)
	}

	// A label written meanwhile (as the autoscaler's ToBeDeleted taint
	// would be) makes the copy read before it stale.
	changed := created.DeepCopy()
	changed.Labels["example.com/changed"] = "true"
	if changed, err = client.CoreV1().Nodes().Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clusterautoscaler.Register(ctx, client, created); !apierrors.IsConflict(err) {
		t.Fatalf("Register with a stale copy: %v, want a conflict", err)
	}
	if err := clusterautoscaler.Register(ctx, client, changed); err != nil {
		t.Fatal(err)
	}
	poll(t, "the kubelet emulator reports the registered node Ready", 30*time.Second, func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !clusterautoscaler.Registered(n) {
			return false, nil
		}
		if n.Labels[v1.LabelHostname] != node.Name || n.Labels["example.com/changed"] != "true" {
			t.Errorf("labels after Register: %v, want hostname %s and the other labels kept", n.Labels, node.Name)
		}
		return nodeReady(n), nil
	})

	if err := client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clusterautoscaler.Register(ctx, client, changed); !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		t.Errorf("Register of a deleted node: %v, want not found or a conflict", err)
	}
	recreated := node.DeepCopy()
	recreated.ResourceVersion = ""
	if _, err := client.CoreV1().Nodes().Create(ctx, recreated, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := clusterautoscaler.Register(ctx, client, changed); !apierrors.IsConflict(err) {
		t.Errorf("Register of a node deleted and created again under its name: %v, want a conflict (a new resourceVersion)", err)
	}
}
