package kubelet

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNodeStatusPatchKeepsTransitionTime(t *testing.T) {
	before := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := before.Add(time.Hour)
	tests := map[string]struct {
		conditions     []v1.NodeCondition
		wantTransition time.Time
	}{
		"no conditions yet": {wantTransition: now},
		"Ready already": {
			conditions:     []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastTransitionTime: before}},
			wantTransition: before.Time,
		},
		"Unknown before": {
			conditions:     []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown, LastTransitionTime: before}},
			wantTransition: now,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u"}, Status: v1.NodeStatus{Conditions: tc.conditions}}
			data, err := NodeStatusPatch(node, now)
			if err != nil {
				t.Fatal(err)
			}
			var patch struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
				Status   v1.NodeStatus     `json:"status"`
			}
			if err := json.Unmarshal(data, &patch); err != nil {
				t.Fatal(err)
			}
			if patch.Metadata.UID != "u" {
				t.Errorf("patch uid = %q, want the node's (a precondition)", patch.Metadata.UID)
			}
			ready := patch.Status.Conditions[0]
			if ready.Type != v1.NodeReady || ready.Status != v1.ConditionTrue {
				t.Fatalf("first condition = %s=%s, want Ready=True", ready.Type, ready.Status)
			}
			if got := ready.LastTransitionTime.Time; !got.Equal(tc.wantTransition) {
				t.Errorf("Ready lastTransitionTime = %v, want %v", got, tc.wantTransition)
			}
			if !ready.LastHeartbeatTime.Time.Equal(now) {
				t.Errorf("Ready lastHeartbeatTime = %v, want %v", ready.LastHeartbeatTime, now)
			}
		})
	}
}

// TestAdoptNodes runs the kubelet against a fake clientset: a node that
// matches is reported Ready with its capacity kept and gets a renewed lease;
// one that does not match is left alone; a deleted adopted node loses its
// lease.
func TestAdoptNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("3900m"), v1.ResourcePods: resource.MustParse("110")}
	launched := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "launched", UID: "uid-launched"},
		Spec:       v1.NodeSpec{ProviderID: "kwok://launched"},
		Status:     v1.NodeStatus{Capacity: capacity, Allocatable: capacity, Phase: v1.NodePending},
	}
	other := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "uid-other"},
		Status:     v1.NodeStatus{Capacity: capacity, Allocatable: capacity, Phase: v1.NodePending},
	}
	client := fake.NewClientset(launched, other)
	k := New(client)
	k.AdoptNodes(func(n *v1.Node) bool { return strings.HasPrefix(n.Spec.ProviderID, "kwok://") }, 20*time.Millisecond)
	factory := informers.NewSharedInformerFactory(client, 0)
	if err := k.Start(ctx, factory); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())

	poll := func(what string, cond func() (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return cond()
		}); err != nil {
			t.Fatalf("waiting until %s: %v", what, err)
		}
	}
	var node *v1.Node
	poll("the launched node is Ready", func() (bool, error) {
		var err error
		node, err = client.CoreV1().Nodes().Get(ctx, "launched", metav1.GetOptions{})
		return err == nil && isReady(node), err
	})
	if node.Status.Phase != v1.NodeRunning {
		t.Errorf("phase = %s, want Running", node.Status.Phase)
	}
	if diff := cmp.Diff(capacity, node.Status.Allocatable); diff != "" {
		t.Errorf("allocatable changed (-want,+got):\n%s", diff)
	}
	var first *metav1.MicroTime
	poll("the lease is renewed", func() (bool, error) {
		lease, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "launched", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if got := lease.OwnerReferences; len(got) != 1 || got[0].UID != "uid-launched" {
			t.Fatalf("lease owners = %+v, want the node", got)
		}
		if first == nil {
			first = lease.Spec.RenewTime
			return false, nil
		}
		return lease.Spec.RenewTime.After(first.Time), nil
	})
	if got, err := client.CoreV1().Nodes().Get(ctx, "other", metav1.GetOptions{}); err != nil || len(got.Status.Conditions) != 0 {
		t.Errorf("node other: conditions %v (err %v), want none: it does not match", got.Status.Conditions, err)
	}
	if got := k.Adopted(); len(got) != 1 || got[0] != "launched" {
		t.Errorf("Adopted() = %v, want [launched]", got)
	}

	if err := client.CoreV1().Nodes().Delete(ctx, "launched", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("the lease is deleted", func() (bool, error) {
		_, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "launched", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if got := k.Adopted(); len(got) != 0 {
		t.Errorf("Adopted() = %v after the delete, want none", got)
	}
}
