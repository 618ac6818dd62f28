package karpenter

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// Labels Karpenter puts on the Nodes it launches.
const (
	// NodePoolLabel names the NodePool of a Karpenter node.
	NodePoolLabel = "karpenter.sh/nodepool"
	// InstanceCPULabel is the KWOK instance type's CPU count ("4").
	InstanceCPULabel = "karpenter.kwok.sh/instance-cpu"
	// InstanceFamilyLabel is the KWOK instance type's family: c (2 GiB of
	// memory per CPU), m (4 GiB) or s (8 GiB).
	InstanceFamilyLabel = "karpenter.kwok.sh/instance-family"
)

// KWOKProviderIDPrefix starts the spec.providerID of every Node the KWOK
// cloud provider creates.
const KWOKProviderIDPrefix = "kwok://"

// IsKarpenterNode reports whether node was launched by Karpenter's KWOK cloud
// provider (it has no kubelet of its own).
func IsKarpenterNode(node *v1.Node) bool {
	return strings.HasPrefix(node.Spec.ProviderID, KWOKProviderIDPrefix)
}

// NodePool describes the NodePool Start creates, and its KWOKNodeClass of
// the same name. Zero values are the defaults.
type NodePool struct {
	// Name of the NodePool and of the KWOKNodeClass; default "default".
	Name string
	// InstanceFamily is c (default), m or s.
	InstanceFamily string
	// InstanceCPUs are the instance sizes allowed; default 2, 4 and 8 CPUs.
	// KWOK's allocatable is the size less 100m CPU (a 4-CPU type: 3900m).
	InstanceCPUs []int
	// ConsolidationPolicy is WhenEmptyOrUnderutilized (default) or WhenEmpty.
	ConsolidationPolicy string
	// ConsolidateAfter is how long a node must be consolidatable before
	// Karpenter disrupts it, in whole seconds; zero means at once, negative
	// means Never.
	ConsolidateAfter time.Duration
	// RegistrationDelay is the KWOKNodeClass's nodeRegistrationDelay: how
	// long after a NodeClaim's launch its Node object appears (models the
	// instance's boot), in whole seconds; zero means none.
	RegistrationDelay time.Duration
	// CPULimit caps the CPU of all the pool's nodes; zero means no limit.
	CPULimit int
	// Taints are put on every node of the pool (a GPU pool's
	// nvidia.com/gpu=present:NoSchedule).
	Taints []v1.Taint
}

func (p NodePool) withDefaults() NodePool {
	if p.Name == "" {
		p.Name = "default"
	}
	if p.InstanceFamily == "" {
		p.InstanceFamily = "c"
	}
	if len(p.InstanceCPUs) == 0 {
		p.InstanceCPUs = []int{2, 4, 8}
	}
	if p.ConsolidationPolicy == "" {
		p.ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	}
	return p
}

// seconds formats d as the CRDs' duration pattern wants it ("90s").
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// Objects returns the KWOKNodeClass and the NodePool that p describes.
func (p NodePool) Objects() (nodeClass, nodePool *unstructured.Unstructured) {
	p = p.withDefaults()
	classSpec := map[string]any{}
	if p.RegistrationDelay > 0 {
		classSpec["nodeRegistrationDelay"] = seconds(p.RegistrationDelay)
	}
	nodeClass = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": KWOKNodeClassGVR.GroupVersion().String(),
		"kind":       "KWOKNodeClass",
		"metadata":   map[string]any{"name": p.Name},
		"spec":       classSpec,
	}}

	cpus := make([]any, 0, len(p.InstanceCPUs))
	for _, n := range p.InstanceCPUs {
		cpus = append(cpus, strconv.Itoa(n))
	}
	in := func(key string, values ...any) map[string]any {
		return map[string]any{"key": key, "operator": string(v1.NodeSelectorOpIn), "values": values}
	}
	consolidateAfter := "Never"
	if p.ConsolidateAfter >= 0 {
		consolidateAfter = seconds(p.ConsolidateAfter)
	}
	spec := map[string]any{
		"template": map[string]any{
			"spec": map[string]any{
				"nodeClassRef": map[string]any{
					"group": KWOKNodeClassGVR.Group,
					"kind":  "KWOKNodeClass",
					"name":  p.Name,
				},
				"requirements": []any{
					in(InstanceFamilyLabel, p.InstanceFamily),
					in(InstanceCPULabel, cpus...),
					in(v1.LabelOSStable, "linux"),
					in(v1.LabelArchStable, "amd64"),
					in("karpenter.sh/capacity-type", "on-demand"),
				},
				"expireAfter": "Never",
			},
		},
		"disruption": map[string]any{
			"consolidationPolicy": p.ConsolidationPolicy,
			"consolidateAfter":    consolidateAfter,
			// The default budget is 10% of the pool's nodes at a time.
			"budgets": []any{map[string]any{"nodes": "100%"}},
		},
	}
	if len(p.Taints) > 0 {
		taints := make([]any, 0, len(p.Taints))
		for _, t := range p.Taints {
			taint := map[string]any{"key": t.Key, "effect": string(t.Effect)}
			if t.Value != "" {
				taint["value"] = t.Value
			}
			taints = append(taints, taint)
		}
		template := spec["template"].(map[string]any)["spec"].(map[string]any)
		template["taints"] = taints
	}
	if p.CPULimit > 0 {
		spec["limits"] = map[string]any{"cpu": strconv.Itoa(p.CPULimit)}
	}
	nodePool = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": NodePoolGVR.GroupVersion().String(),
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": p.Name},
		"spec":       spec,
	}}
	return nodeClass, nodePool
}

// ApplyNodePool creates or updates the KWOKNodeClass and the NodePool of p.
func ApplyNodePool(ctx context.Context, client dynamic.Interface, p NodePool) error {
	nodeClass, nodePool := p.Objects()
	if err := apply(ctx, client.Resource(KWOKNodeClassGVR), nodeClass); err != nil {
		return fmt.Errorf("applying KWOKNodeClass %s: %w", nodeClass.GetName(), err)
	}
	if err := apply(ctx, client.Resource(NodePoolGVR), nodePool); err != nil {
		return fmt.Errorf("applying NodePool %s: %w", nodePool.GetName(), err)
	}
	return nil
}

// DeleteNodePool deletes the NodeClaims of the NodePool named name and
// waits until they are gone (Karpenter's finalizer terminates their nodes
// first), then deletes the NodePool and its KWOKNodeClass. The claims go
// first because nothing else would remove them here: Karpenter leaves a
// pool-less node alone, and only the garbage collector, which a bare
// control plane does not run, follows a NodeClaim's owner reference to its
// deleted NodePool. A pod still on a node delays its removal until it is
// evicted.
func DeleteNodePool(ctx context.Context, client dynamic.Interface, name string) error {
	claims := client.Resource(NodeClaimGVR)
	selector := metav1.ListOptions{LabelSelector: NodePoolLabel + "=" + name}
	list, err := claims.List(ctx, selector)
	if err != nil {
		return fmt.Errorf("listing the NodeClaims of NodePool %s: %w", name, err)
	}
	for _, c := range list.Items {
		if err := claims.Delete(ctx, c.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting NodeClaim %s: %w", c.GetName(), err)
		}
	}
	var left int
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := claims.List(ctx, selector)
		if err != nil {
			return false, err
		}
		left = len(list.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the %d NodeClaims of NodePool %s to go: %w", left, name, err)
	}
	if err := client.Resource(NodePoolGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NodePool %s: %w", name, err)
	}
	if err := client.Resource(KWOKNodeClassGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting KWOKNodeClass %s: %w", name, err)
	}
	return nil
}
