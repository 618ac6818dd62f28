package autoscale

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
	"github.com/tandem-scheduler/tandem/harness/karpenter"
	"github.com/tandem-scheduler/tandem/harness/sim/kubelet"
)

const schedulerName = "tandem-scheduler"

// TestScaleUpAndDown: a pending pod of tandem-scheduler that a scheduler
// marked Unschedulable, and that fits no existing node, gets a NodeClaim and
// a Node from Karpenter; the kubelet emulator reports the node Ready; tandem
// binds the pod there and the kubelet admits it. Once the pod is gone,
// Karpenter's consolidation removes the empty node, finalizers and all,
// without a kube-controller-manager. A pending pod that no scheduler marked
// gets nothing.
func TestScaleUpAndDown(t *testing.T) {
	ctx := t.Context()
	const ns = "scale-up-and-down"
	if err := controlplane.EnsureNamespace(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	noNodeClaims(t)
	// An existing node the pod does not fit.
	small := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("4Gi")}
	if _, err := controlplane.CreateNode(ctx, client, "small", small, nil); err != nil {
		t.Fatal(err)
	}
	claims := &claimWatch{}
	if _, err := claims.list(ctx); err != nil {
		t.Fatal(err)
	}
	before := claims.seen.Clone()

	// Never marked by a scheduler: Karpenter must leave it alone.
	quiet := newPod(ns, "quiet", "3", "no-such-scheduler")
	if _, err := client.CoreV1().Pods(ns).Create(ctx, quiet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := client.CoreV1().Pods(ns).Create(ctx, newPod(ns, "big", "3", schedulerName), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What kube-scheduler writes when no node fits (no scheduler runs yet).
	pod.Status.Conditions = []v1.PodCondition{{
		Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable,
		Message:            "0/1 nodes are available: 1 Insufficient cpu.",
		LastTransitionTime: metav1.Now(),
	}}
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	marked := time.Now()

	claim, node := launched(t, claims)
	t.Logf("pod marked Unschedulable -> node %s Ready, NodeClaim %s Initialized: %v (registration delay %v)",
		node.Name, claim.GetName(), time.Since(marked).Round(10*time.Millisecond), registrationDelay)

	if !karpenter.IsKarpenterNode(node) {
		t.Errorf("node %s has providerID %q, want a KWOK one", node.Name, node.Spec.ProviderID)
	}
	if got := node.Labels[karpenter.NodePoolLabel]; got != "default" {
		t.Errorf("node label %s = %q, want default", karpenter.NodePoolLabel, got)
	}
	// The cheapest allowed size that fits 3 CPUs: 4 CPUs, 3900m allocatable.
	if got := node.Labels[karpenter.InstanceCPULabel]; got != "4" {
		t.Errorf("node label %s = %q, want 4", karpenter.InstanceCPULabel, got)
	}
	if got := node.Status.Allocatable[v1.ResourceCPU]; got.Cmp(resource.MustParse("3900m")) != 0 {
		t.Errorf("node allocatable cpu = %s, want 3900m (as Karpenter set it)", got.String())
	}
	// KWOK sets the hostname label to the NodeClaim's name, not the node's:
	// a hostname affinity built from a node name matches no KWOK node.
	if got := node.Labels[v1.LabelHostname]; got != claim.GetName() || got == node.Name {
		t.Errorf("node %s label %s = %q, want the NodeClaim's name %q (KWOK's labelling)", node.Name, v1.LabelHostname, got, claim.GetName())
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == "karpenter.sh/unregistered" {
			t.Errorf("node still has taint %v after initialization", taint)
		}
	}
	if gap := node.CreationTimestamp.Sub(claim.GetCreationTimestamp().Time); gap < registrationDelay-time.Second {
		t.Errorf("node created %v after its NodeClaim, want about the registration delay %v", gap, registrationDelay)
	}
	if note := eventNote(t, ns, "big", "Nominated"); !strings.Contains(note, "nodeclaim/"+claim.GetName()) {
		t.Errorf("Karpenter's Nominated event on pod big = %q, want it to name nodeclaim/%s", note, claim.GetName())
	}
	lease, err := client.CoordinationV1().Leases(kubelet.NodeLeaseNamespace).Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the kubelet emulator's lease of node %s: %v", node.Name, err)
	}

	// tandem binds the pod to the new node; the kubelet admits it.
	sched, err := inprocess.Start(ctx, restConfig, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Stop()
	poll(t, "pod big runs on the new node", 30*time.Second, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" && p.Spec.NodeName != node.Name {
			return false, fmt.Errorf("pod big bound to %s, want the new node %s", p.Spec.NodeName, node.Name)
		}
		if p.Status.Phase == v1.PodFailed {
			return false, fmt.Errorf("pod big failed: %s %s", p.Status.Reason, p.Status.Message)
		}
		return p.Status.Phase == v1.PodRunning, nil
	})
	poll(t, "the lease is renewed", 10*time.Second, func() (bool, error) {
		l, err := client.CoordinationV1().Leases(kubelet.NodeLeaseNamespace).Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(lease.Spec.RenewTime.Time), err
	})

	// Scale down: the node is empty once the pod is gone.
	zero := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(ctx, "big", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	removed(t, claim, node)
	t.Logf("pod deleted -> node and NodeClaim gone: %v", time.Since(deleted).Round(10*time.Millisecond))
	if _, err := client.CoreV1().Nodes().Get(ctx, "small", metav1.GetOptions{}); err != nil {
		t.Errorf("node small (not Karpenter's): %v, want it kept", err)
	}

	// The pod no scheduler marked: no NodeClaim, no event, still pending.
	if _, err := claims.list(ctx); err != nil {
		t.Fatal(err)
	}
	if got := claims.seen.Difference(before).UnsortedList(); len(got) != 1 {
		t.Errorf("NodeClaims seen = %v, want only %s (pod quiet was never marked Unschedulable)", got, claim.GetName())
	}
	if n := countEvents(t, ns, "quiet"); n != 0 {
		t.Errorf("pod quiet has %d events, want none from Karpenter", n)
	}
}

// TestTandemMarksKarpenterLaunchesAndDrains is the loop without help: tandem
// itself marks a pod that fits no node Unschedulable, Karpenter launches the
// cheapest allowed size that fits (8 CPUs for 6), and tandem binds the pod
// once the node is Ready. Then the NodeClaim is deleted with the pod
// running: Karpenter drains and removes the node.
func TestTandemMarksKarpenterLaunchesAndDrains(t *testing.T) {
	ctx := t.Context()
	const ns = "tandem-marks"
	if err := controlplane.EnsureNamespace(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	noNodeClaims(t)
	claims := &claimWatch{}
	if _, err := claims.list(ctx); err != nil {
		t.Fatal(err)
	}
	sched, err := inprocess.Start(ctx, restConfig, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Stop()
	created := time.Now()
	if _, err := client.CoreV1().Pods(ns).Create(ctx, newPod(ns, "wide", "6", schedulerName), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim, node := launched(t, claims)
	if got := node.Labels[karpenter.InstanceCPULabel]; got != "8" {
		t.Errorf("node label %s = %q, want 8 (the smallest allowed size that fits 6 CPUs)", karpenter.InstanceCPULabel, got)
	}
	var bound time.Time
	poll(t, "tandem binds pod wide to the new node", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "wide", metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" {
			return false, err
		}
		if p.Spec.NodeName != node.Name {
			return false, fmt.Errorf("pod wide bound to %s, want the new node %s", p.Spec.NodeName, node.Name)
		}
		bound = time.Now()
		return true, nil
	})
	t.Logf("pod created -> bound by tandem on a new node: %v", bound.Sub(created).Round(10*time.Millisecond))
	poll(t, "the kubelet emulator runs pod wide", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "wide", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning, err
	})

	// Deleting the NodeClaim (what `kubectl delete nodeclaim` does) makes
	// Karpenter drain the node: it evicts the running pod through the
	// Eviction API, the kubelet emulator confirms the pod's deletion, and
	// Karpenter's finalizers on the Node and the NodeClaim complete.
	if err := dyn.Resource(karpenter.NodeClaimGVR).Delete(ctx, claim.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	drained := time.Now()
	poll(t, "Karpenter evicts pod wide", time.Minute, func() (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "wide", metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreFound(err)
	})
	removed(t, claim, node)
	t.Logf("NodeClaim deleted -> pod evicted, node and NodeClaim gone: %v", time.Since(drained).Round(10*time.Millisecond))
	if n := countReason(t, ns, "wide", "Evicted"); n == 0 {
		t.Errorf("pod wide has no Evicted event, want Karpenter's eviction")
	}
}

// launched waits for a NodeClaim that w has not seen before, then for its
// Node to be Ready and the NodeClaim Initialized.
func launched(t *testing.T, w *claimWatch) (*unstructured.Unstructured, *v1.Node) {
	t.Helper()
	ctx := t.Context()
	before := w.seen.Clone()
	var claim *unstructured.Unstructured
	poll(t, "Karpenter creates a NodeClaim", time.Minute, func() (bool, error) {
		list, err := w.list(ctx)
		for i := range list {
			if !before.Has(list[i].GetName()) {
				claim = &list[i]
				return true, nil
			}
		}
		return false, err
	})
	var node *v1.Node
	poll(t, "the NodeClaim's node is Ready and the NodeClaim Initialized", time.Minute, func() (bool, error) {
		c, err := dyn.Resource(karpenter.NodeClaimGVR).Get(ctx, claim.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		name, _, _ := unstructured.NestedString(c.Object, "status", "nodeName")
		if name == "" || !conditionTrue(c, "Initialized") {
			return false, nil
		}
		if node, err = client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return nodeReady(node), nil
	})
	return claim, node
}

// removed waits until Karpenter has removed the node and its NodeClaim, and
// the kubelet emulator has forgotten the node and deleted its lease.
func removed(t *testing.T, claim *unstructured.Unstructured, node *v1.Node) {
	t.Helper()
	ctx := t.Context()
	poll(t, "Karpenter removes the empty node and its NodeClaim", 3*time.Minute, func() (bool, error) {
		_, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, ignoreFound(err)
		}
		_, err = dyn.Resource(karpenter.NodeClaimGVR).Get(ctx, claim.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreFound(err)
	})
	poll(t, "the kubelet emulator forgets the node and deletes its lease", 10*time.Second, func() (bool, error) {
		_, err := client.CoordinationV1().Leases(kubelet.NodeLeaseNamespace).Get(ctx, node.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && !slices.Contains(kubelets.Adopted(), node.Name), ignoreFound(err)
	})
}

func newPod(ns, name, cpu, scheduler string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{
			SchedulerName: scheduler,
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "main", Image: "image", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("1Gi")},
			}}},
		},
	}
}

// claimWatch lists NodeClaims and remembers every name it saw.
type claimWatch struct{ seen sets.Set[string] }

func (w *claimWatch) list(ctx context.Context) ([]unstructured.Unstructured, error) {
	if w.seen == nil {
		w.seen = sets.New[string]()
	}
	list, err := dyn.Resource(karpenter.NodeClaimGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range list.Items {
		w.seen.Insert(c.GetName())
	}
	return list.Items, nil
}

// noNodeClaims waits until Karpenter has removed every NodeClaim an
// earlier test left. Karpenter replaces the capacity of a node it drains
// before the pods are gone (TestTandemMarksKarpenterLaunchesAndDrains's
// evicted pod got a second NodeClaim), and consolidates that empty node
// some 20 s later: while it stands, Karpenter may place the next test's
// pending pods there instead of launching the node the test waits for.
func noNodeClaims(t *testing.T) {
	t.Helper()
	poll(t, "no NodeClaim is left from an earlier test", 3*time.Minute, func() (bool, error) {
		list, err := dyn.Resource(karpenter.NodeClaimGVR).List(t.Context(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	})
}

func poll(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond()
	}); err != nil {
		t.Fatalf("waiting until %s: %v (Karpenter's log: %s)", what, err, karp.Process().LogPath)
	}
}

func ignoreFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func conditionTrue(obj *unstructured.Unstructured, typ string) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

func nodeReady(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// eventNote waits for an event with reason on the named pod and returns its message.
func eventNote(t *testing.T, ns, pod, reason string) string {
	t.Helper()
	var note string
	poll(t, fmt.Sprintf("event %s on pod %s", reason, pod), time.Minute, func() (bool, error) {
		list, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name == pod && ev.Reason == reason {
				note = ev.Message
				return true, nil
			}
		}
		return false, nil
	})
	return note
}

func countEvents(t *testing.T, ns, pod string) int {
	t.Helper()
	return countReason(t, ns, pod, "")
}

// countReason counts the events on the named pod with reason (any if empty).
func countReason(t *testing.T, ns, pod, reason string) int {
	t.Helper()
	list, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == pod && (reason == "" || ev.Reason == reason) {
			n++
		}
	}
	return n
}
