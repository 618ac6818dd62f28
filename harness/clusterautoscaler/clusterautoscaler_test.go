package clusterautoscaler

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
)

func TestFlagsArgs(t *testing.T) {
	got := Flags{
		ScanInterval:                  time.Second,
		Expander:                      "least-waste",
		AllowedSchedulerNames:         []string{"tandem-scheduler", "default-scheduler"},
		BypassedSchedulerNames:        []string{"tandem-scheduler"},
		ScaleDownUnneededTime:         6 * time.Second,
		ScaleDownUtilizationThreshold: 0.25,
		Extra:                         []string{"--cores-total=0:100"},
	}.Args()
	want := []string{
		"--scan-interval=1s", "--expander=least-waste",
		"--allowed-scheduler-names=tandem-scheduler,default-scheduler",
		"--bypassed-scheduler-names=tandem-scheduler",
		"--scale-down-unneeded-time=6s", "--scale-down-utilization-threshold=0.25",
		"--v=1", "--cores-total=0:100",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Args() =\n%v\nwant\n%v", got, want)
	}
	if got := (Flags{}).Args(); !slices.Equal(got, []string{"--v=1"}) {
		t.Errorf("zero Flags: Args() = %v, want only --v=1 (every default kept)", got)
	}
}

// TestProviderConfigTemplates reads the templates back as the KWOK provider
// does (the client-go scheme's universal deserializer, one document per
// Node) and checks what the provider copies onto every node it creates.
func TestProviderConfigTemplates(t *testing.T) {
	client := fake.NewClientset()
	groups := []NodeGroup{{CPUs: 4, MemoryPerCPU: 2 << 30, Max: 24}, {CPUs: 16, MemoryPerCPU: 2 << 30, Min: 1, Max: 6}}
	if err := ApplyProviderConfig(t.Context(), client, "kube-system", groups); err != nil {
		t.Fatal(err)
	}
	// A second apply replaces, as a rerun does.
	if err := ApplyProviderConfig(t.Context(), client, "kube-system", groups); err != nil {
		t.Fatalf("second apply: %v", err)
	}
	cfg, err := client.CoreV1().ConfigMaps("kube-system").Get(t.Context(), ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"readNodesFrom: configmap", `fromNodeLabelKey: "` + NodeGroupLabel + `"`, "skipTaint: true", "name: " + TemplatesConfigMapName} {
		if !strings.Contains(cfg.Data["config"], want) {
			t.Errorf("provider config lacks %q:\n%s", want, cfg.Data["config"])
		}
	}
	tpl, err := client.CoreV1().ConfigMaps("kube-system").Get(t.Context(), TemplatesConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(tpl.Data["templates"], "---\n")
	if len(docs) != 2 {
		t.Fatalf("%d template documents, want 2", len(docs))
	}
	decode := serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer().Decode
	obj, _, err := decode([]byte(docs[1]), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	node, ok := obj.(*v1.Node)
	if !ok {
		t.Fatalf("template decodes to %T, want a Node", obj)
	}
	if node.Labels[NodeGroupLabel] != "c-16x" || node.Annotations[minCountAnnotation] != "1" || node.Annotations[maxCountAnnotation] != "6" {
		t.Errorf("template labels %v annotations %v: want group c-16x, min 1, max 6", node.Labels, node.Annotations)
	}
	if _, ok := node.Labels[v1.LabelHostname]; ok {
		t.Errorf("template has a hostname label; the provider would copy it onto every node of the group")
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != v1.TaintNodeNotReady || node.Spec.Taints[0].Effect != v1.TaintEffectNoSchedule {
		t.Errorf("template taints %v, want only the not-ready NoSchedule taint a booting node has", node.Spec.Taints)
	}
	for name, want := range map[v1.ResourceName]string{v1.ResourceCPU: "15900m", v1.ResourceMemory: "32758Mi", v1.ResourcePods: "256"} {
		if got := node.Status.Allocatable[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("allocatable %s = %s, want %s (Karpenter's KWOK c-16x)", name, got.String(), want)
		}
	}
	if len(node.Status.Conditions) != 0 {
		t.Errorf("template conditions %v, want none (not Ready until it boots)", node.Status.Conditions)
	}

	for name, bad := range map[string][]NodeGroup{
		"no cpus":   {{MemoryPerCPU: 1 << 30, Max: 1}},
		"min > max": {{CPUs: 4, MemoryPerCPU: 1 << 30, Min: 2, Max: 1}},
		"twice":     {{CPUs: 4, MemoryPerCPU: 1 << 30, Max: 1}, {CPUs: 4, MemoryPerCPU: 2 << 30, Max: 1}},
	} {
		if err := ApplyProviderConfig(t.Context(), client, "kube-system", bad); err == nil {
			t.Errorf("%s: ApplyProviderConfig accepted %+v", name, bad)
		}
	}
}

func TestIsClusterAutoscalerNodeAndRegistered(t *testing.T) {
	node := NodeGroup{CPUs: 4, MemoryPerCPU: 2 << 30, Max: 1}.Template()
	node.Name = "c-4x-abcde"
	if IsClusterAutoscalerNode(node) {
		t.Errorf("a template without the provider's marks counts as its node")
	}
	node.Annotations[ManagedAnnotation] = "fake"
	node.Spec.ProviderID = "kwok:" + node.Name
	if !IsClusterAutoscalerNode(node) {
		t.Errorf("a node with the provider's annotation and providerID is not its node")
	}
	if Registered(node) {
		t.Errorf("a node with the not-ready taint and no hostname counts as registered")
	}
	node.Labels[v1.LabelHostname] = node.Name
	if Registered(node) {
		t.Errorf("a node with the not-ready taint counts as registered")
	}
	node.Spec.Taints = nil
	if !Registered(node) {
		t.Errorf("a node with its hostname and no not-ready taint is not registered")
	}
}
