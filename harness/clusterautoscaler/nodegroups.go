package clusterautoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// The KWOK provider's names (cloudprovider/kwok in kubernetes/autoscaler).
const (
	// ConfigMapName is the provider's configuration (KWOK_PROVIDER_CONFIGMAP's default).
	ConfigMapName = "kwok-provider-config"
	// TemplatesConfigMapName holds the template Nodes, under "templates".
	TemplatesConfigMapName = "kwok-provider-templates"
	// ManagedAnnotation marks the Nodes the provider created ("fake").
	ManagedAnnotation = "kwok.x-k8s.io/node"
	// NodeGroupAnnotation names a created Node's node group.
	NodeGroupAnnotation = "cluster-autoscaler.kwok.nodegroup/name"
	minCountAnnotation  = "cluster-autoscaler.kwok.nodegroup/min-count"
	maxCountAnnotation  = "cluster-autoscaler.kwok.nodegroup/max-count"
	providerIDPrefix    = "kwok:"
)

// NodeGroupLabel groups the templates into node groups (the provider's
// nodegroups.fromNodeLabelKey): its value is the node group's name.
const NodeGroupLabel = v1.LabelInstanceTypeStable

// NodeGroup is a group of identical instances of CPUs cpus and
// CPUs x MemoryPerCPU memory: allocatable is capacity less 100m cpu and 10Mi
// memory, pods 16 per cpu (at most 1024), 20Gi of ephemeral storage, as
// Karpenter's KWOK instance types, so that runs with either autoscaler
// launch the same machines.
type NodeGroup struct {
	// Name names the group (its NodeGroupLabel value); default c-<cpus>x.
	Name         string
	CPUs         int
	MemoryPerCPU int64
	// Min and Max bound the group's size.
	Min, Max int
	// Labels are added to the template's labels.
	Labels map[string]string
}

func (g NodeGroup) name() string {
	if g.Name != "" {
		return g.Name
	}
	return fmt.Sprintf("c-%dx", g.CPUs)
}

// Template is the group's template Node, as the provider reads it: the
// not-ready taint and no Ready condition (the instance has not booted), no
// hostname label (the provider copies the template's labels onto every
// Node it creates; Register sets each node's own).
func (g NodeGroup) Template() *v1.Node {
	cpu := resource.NewQuantity(int64(g.CPUs), resource.DecimalSI)
	mem := resource.NewQuantity(int64(g.CPUs)*g.MemoryPerCPU, resource.BinarySI)
	pods := resource.NewQuantity(int64(min(16*g.CPUs, 1024)), resource.DecimalSI)
	storage := resource.MustParse("20Gi")
	allocCPU := resource.NewMilliQuantity(int64(g.CPUs)*1000-100, resource.DecimalSI)
	allocMem := resource.NewQuantity(int64(g.CPUs)*g.MemoryPerCPU-10<<20, resource.BinarySI)
	labels := map[string]string{
		v1.LabelArchStable:     "amd64",
		v1.LabelOSStable:       "linux",
		NodeGroupLabel:         g.name(),
		v1.LabelTopologyZone:   "test-zone-a",
		v1.LabelTopologyRegion: "test-region",
	}
	for k, v := range g.Labels {
		labels[k] = v
	}
	return &v1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   g.name(),
			Labels: labels,
			Annotations: map[string]string{
				minCountAnnotation: strconv.Itoa(g.Min),
				maxCountAnnotation: strconv.Itoa(g.Max),
			},
		},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{
			Capacity: v1.ResourceList{v1.ResourceCPU: *cpu, v1.ResourceMemory: *mem, v1.ResourcePods: *pods,
				v1.ResourceEphemeralStorage: storage},
			Allocatable: v1.ResourceList{v1.ResourceCPU: *allocCPU, v1.ResourceMemory: *allocMem,
				v1.ResourcePods: pods.DeepCopy(), v1.ResourceEphemeralStorage: storage.DeepCopy()},
			NodeInfo: v1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
		},
	}
}

// providerConfig is the KWOK provider's configuration (apiVersion v1alpha1):
// templates from the ConfigMap, grouped by NodeGroupLabel, and no taint of
// its own (skipTaint: the nodes are the run's only autoscaled ones and must
// take the runners).
func providerConfig() string {
	return `apiVersion: v1alpha1
readNodesFrom: configmap
nodegroups:
  fromNodeLabelKey: "` + NodeGroupLabel + `"
nodes:
  skipTaint: true
configmap:
  name: ` + TemplatesConfigMapName + `
`
}

// ApplyProviderConfig creates or replaces, in namespace, the provider's
// configuration and the templates of groups.
func ApplyProviderConfig(ctx context.Context, client kubernetes.Interface, namespace string, groups []NodeGroup) error {
	var docs []string
	seen := map[string]bool{}
	for _, g := range groups {
		if g.CPUs <= 0 || g.MemoryPerCPU <= 0 || g.Max < g.Min || g.Min < 0 {
			return fmt.Errorf("clusterautoscaler: node group %q: want cpus and memory per cpu > 0, 0 <= min <= max", g.name())
		}
		if seen[g.name()] {
			return fmt.Errorf("clusterautoscaler: node group %q twice", g.name())
		}
		seen[g.name()] = true
		b, err := yaml.Marshal(g.Template())
		if err != nil {
			return err
		}
		docs = append(docs, string(b))
	}
	for name, data := range map[string]map[string]string{
		ConfigMapName:          {"config": providerConfig()},
		TemplatesConfigMapName: {"templates": strings.Join(docs, "---\n")},
	} {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: data}
		_, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("clusterautoscaler: writing ConfigMap %s/%s: %w", namespace, name, err)
		}
	}
	return nil
}

// IsClusterAutoscalerNode reports whether node is one the KWOK provider created.
func IsClusterAutoscalerNode(node *v1.Node) bool {
	return node.Annotations[ManagedAnnotation] == "fake" && strings.HasPrefix(node.Spec.ProviderID, providerIDPrefix)
}

// IsRegisteredNode reports whether node is one the KWOK provider created and
// Register has registered: the nodes a kubelet emulator should adopt.
func IsRegisteredNode(node *v1.Node) bool {
	return IsClusterAutoscalerNode(node) && Registered(node)
}

// Registered reports whether Register has run for node (its hostname label
// is set and the not-ready taint gone).
func Registered(node *v1.Node) bool {
	if node.Labels[v1.LabelHostname] != node.Name {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == v1.TaintNodeNotReady {
			return false
		}
	}
	return true
}

// Register does for a node the provider created what its kubelet and the
// node lifecycle controller would once the instance booted: it labels it with
// its hostname (the node's name) and removes the not-ready taint, so that
// the scheduler may place pods there. The caller reports the node Ready
// (harness/sim/kubelet) right after: the taint goes a moment before the node is
// Ready, the reverse of the node lifecycle controller's order, which no pod
// can use (the scheduler places nothing in that moment that it would not
// place a moment later). The update is guarded by the node's resource
// version: a node changed, deleted or created again meanwhile is left alone.
func Register(ctx context.Context, client kubernetes.Interface, node *v1.Node) error {
	var taints []v1.Taint
	for _, t := range node.Spec.Taints {
		if t.Key != v1.TaintNodeNotReady {
			taints = append(taints, t)
		}
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": node.ResourceVersion,
			"labels":          map[string]string{v1.LabelHostname: node.Name},
		},
		"spec": map[string]any{"taints": taints},
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}
