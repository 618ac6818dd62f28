package kubelet

import (
	"context"
	"encoding/json"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// DefaultHeartbeatInterval is how often an adopted node's lease is renewed
// and its Ready condition's heartbeat written: the kubelet renews its lease
// every 10s (nodeLeaseDurationSeconds 40 / 4).
const DefaultHeartbeatInterval = 10 * time.Second

// NodeLeaseNamespace holds the kubelets' heartbeat leases.
const NodeLeaseNamespace = v1.NamespaceNodeLease

// leaseDurationSeconds is the kubelet's default nodeLeaseDurationSeconds.
const leaseDurationSeconds = 40

// AdoptNodes makes the kubelet also register, as a real kubelet would, every
// Node that match selects. It is meant for Nodes created without a kubelet
// behind them, such as those Karpenter's KWOK cloud provider launches (phase
// Pending, no conditions); match must not select Nodes that something else
// reports on (the simulator's own, created Ready). For each it writes the Ready
// condition (and MemoryPressure, DiskPressure, PIDPressure False, phase
// Running) through the status subresource, keeps capacity and allocatable as
// their creator set them, and renews a Lease in kube-node-lease (owned by the
// Node) every interval (DefaultHeartbeatInterval if zero), as the kubelet's
// heartbeats do. Pods bound there are admitted like on any other node. When
// such a Node is deleted, its kubelet is lost (NodeLost) and its Lease
// deleted (no garbage collector runs in the local control plane). Call it
// before Start.
func (k *Kubelet) AdoptNodes(match func(*v1.Node) bool, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultHeartbeatInterval
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.adopt, k.heartbeat = match, interval
}

// Adopted returns the names of the nodes adopted and not deleted.
func (k *Kubelet) Adopted() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]string, 0, len(k.adopted))
	for name := range k.adopted {
		out = append(out, name)
	}
	return out
}

// onNodeUpsert adopts a node that match selects, and reports it Ready again
// when something else wrote it otherwise.
func (k *Kubelet) onNodeUpsert(ctx context.Context, logger klog.Logger, node *v1.Node) {
	k.mu.Lock()
	match := k.adopt
	_, known := k.adopted[node.Name]
	lost := k.lost[node.Name]
	k.mu.Unlock()
	if match == nil || lost || !match(node) {
		return
	}
	if !known {
		k.mu.Lock()
		k.adopted[node.Name] = node.UID
		k.mu.Unlock()
		logger.V(2).Info("Adopted node", "node", klog.KObj(node), "providerID", node.Spec.ProviderID,
			"allocatable", node.Status.Allocatable)
		k.renewLease(ctx, node.Name, node.UID)
	}
	if !isReady(node) {
		k.writeNodeStatus(ctx, node.Name, node.UID)
	}
}

// onNodeGone forgets a deleted node: its kubelet is lost and its lease goes.
func (k *Kubelet) onNodeGone(ctx context.Context, node *v1.Node) {
	k.mu.Lock()
	_, adopted := k.adopted[node.Name]
	delete(k.adopted, node.Name)
	k.mu.Unlock()
	k.NodeLost(node.Name)
	if !adopted {
		return
	}
	k.writes.Do(ctx, "lease/"+node.Name, func(ctx context.Context) error {
		err := k.client.CoordinationV1().Leases(NodeLeaseNamespace).Delete(ctx, node.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// runHeartbeats renews the leases and Ready heartbeats of the adopted nodes
// every interval until ctx ends.
func (k *Kubelet) runHeartbeats(ctx context.Context, interval time.Duration) {
	// The first beat is one interval after Start: adoption itself wrote one.
	timer := time.NewTimer(interval)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return
	case <-timer.C:
	}
	wait.UntilWithContext(ctx, k.beat, interval)
}

// beat renews the lease and the Ready heartbeat of every adopted node.
func (k *Kubelet) beat(ctx context.Context) {
	k.mu.Lock()
	nodes := make(map[string]types.UID, len(k.adopted))
	for name, uid := range k.adopted {
		nodes[name] = uid
	}
	k.mu.Unlock()
	for name, uid := range nodes {
		k.renewLease(ctx, name, uid)
		k.writeNodeStatus(ctx, name, uid)
	}
}

func isReady(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// NodeStatusPatch is the strategic-merge patch of the status subresource
// with which the kubelet reports node healthy at now: conditions merge by
// type, so capacity, allocatable and other conditions stay as they are, and
// a condition whose status does not change keeps its transition time.
func NodeStatusPatch(node *v1.Node, now time.Time) ([]byte, error) {
	t := metav1.NewTime(now)
	condition := func(typ v1.NodeConditionType, status v1.ConditionStatus, reason, message string) v1.NodeCondition {
		c := v1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: message, LastHeartbeatTime: t, LastTransitionTime: t}
		for _, old := range node.Status.Conditions {
			if old.Type == typ && old.Status == status && !old.LastTransitionTime.IsZero() {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": node.UID},
		"status": map[string]any{
			"phase": v1.NodeRunning,
			"conditions": []v1.NodeCondition{
				condition(v1.NodeReady, v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status (tandem kubelet emulator)"),
				condition(v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				condition(v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				condition(v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			},
		},
	})
}

// writeNodeStatus reports the node Ready, retrying until it goes through or
// the node is gone or replaced (another UID).
func (k *Kubelet) writeNodeStatus(ctx context.Context, name string, uid types.UID) {
	k.writes.Do(ctx, "nodestatus/"+name, func(ctx context.Context) error {
		node, err := k.nodes.Get(name)
		if apierrors.IsNotFound(err) || (err == nil && node.UID != uid) || k.isLost(name) {
			return nil
		}
		if err != nil {
			return err
		}
		patch, err := NodeStatusPatch(node, time.Now())
		if err != nil {
			return err
		}
		_, err = k.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return moot(err)
	})
}

func (k *Kubelet) isLost(node string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost[node]
}

// renewLease creates or renews the node's heartbeat lease.
func (k *Kubelet) renewLease(ctx context.Context, name string, uid types.UID) {
	k.writes.Do(ctx, "lease/"+name, func(ctx context.Context) error {
		if k.isLost(name) {
			return nil // the node is gone: its lease must not come back
		}
		leases := k.client.CoordinationV1().Leases(NodeLeaseNamespace)
		now := metav1.NewMicroTime(time.Now())
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: NodeLeaseNamespace,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}},
				},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity:       ptr.To(name),
					LeaseDurationSeconds: ptr.To[int32](leaseDurationSeconds),
					RenewTime:            &now,
				},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		lease.Spec.RenewTime = &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
}
