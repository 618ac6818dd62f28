package karpenter

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

func TestNodePoolObjects(t *testing.T) {
	tests := map[string]struct {
		pool                 NodePool
		wantClassSpec        map[string]any
		wantName             string
		wantCPUs             []any
		wantConsolidateAfter string
		wantPolicy           string
		wantLimits           map[string]any
		wantTaints           []any
	}{
		"defaults": {
			wantClassSpec:        map[string]any{},
			wantName:             "default",
			wantCPUs:             []any{"2", "4", "8"},
			wantConsolidateAfter: "0s",
			wantPolicy:           "WhenEmptyOrUnderutilized",
		},
		"everything set": {
			pool: NodePool{
				Name: "burst", InstanceCPUs: []int{4}, ConsolidationPolicy: "WhenEmpty",
				ConsolidateAfter: 90 * time.Second, RegistrationDelay: 2500 * time.Millisecond, CPULimit: 32,
				Taints: []v1.Taint{
					{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule},
					{Key: "dedicated", Effect: v1.TaintEffectNoExecute},
				},
			},
			wantClassSpec:        map[string]any{"nodeRegistrationDelay": "2s"},
			wantName:             "burst",
			wantCPUs:             []any{"4"},
			wantConsolidateAfter: "90s",
			wantPolicy:           "WhenEmpty",
			wantLimits:           map[string]any{"cpu": "32"},
			wantTaints: []any{
				map[string]any{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
				map[string]any{"key": "dedicated", "effect": "NoExecute"},
			},
		},
		"never consolidate": {
			pool:                 NodePool{ConsolidateAfter: -1},
			wantClassSpec:        map[string]any{},
			wantName:             "default",
			wantCPUs:             []any{"2", "4", "8"},
			wantConsolidateAfter: "Never",
			wantPolicy:           "WhenEmptyOrUnderutilized",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			class, pool := tc.pool.Objects()
			if diff := cmp.Diff(tc.wantClassSpec, class.Object["spec"]); diff != "" {
				t.Errorf("KWOKNodeClass spec (-want,+got):\n%s", diff)
			}
			if class.GetName() != tc.wantName || pool.GetName() != tc.wantName {
				t.Errorf("names = %q, %q, want %q", class.GetName(), pool.GetName(), tc.wantName)
			}
			ref, _, _ := unstructured.NestedString(pool.Object, "spec", "template", "spec", "nodeClassRef", "name")
			if ref != tc.wantName {
				t.Errorf("nodeClassRef.name = %q, want %q", ref, tc.wantName)
			}
			requirements, _, _ := unstructured.NestedSlice(pool.Object, "spec", "template", "spec", "requirements")
			var cpus []any
			for _, r := range requirements {
				if m := r.(map[string]any); m["key"] == InstanceCPULabel {
					cpus = m["values"].([]any)
				}
			}
			if diff := cmp.Diff(tc.wantCPUs, cpus); diff != "" {
				t.Errorf("%s values (-want,+got):\n%s", InstanceCPULabel, diff)
			}
			after, _, _ := unstructured.NestedString(pool.Object, "spec", "disruption", "consolidateAfter")
			policy, _, _ := unstructured.NestedString(pool.Object, "spec", "disruption", "consolidationPolicy")
			if after != tc.wantConsolidateAfter || policy != tc.wantPolicy {
				t.Errorf("disruption = %s after %s, want %s after %s", policy, after, tc.wantPolicy, tc.wantConsolidateAfter)
			}
			limits, _, _ := unstructured.NestedMap(pool.Object, "spec", "limits")
			if diff := cmp.Diff(tc.wantLimits, limits); diff != "" {
				t.Errorf("limits (-want,+got):\n%s", diff)
			}
			taints, _, _ := unstructured.NestedSlice(pool.Object, "spec", "template", "spec", "taints")
			if diff := cmp.Diff(tc.wantTaints, taints); diff != "" {
				t.Errorf("taints (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestIsKarpenterNode(t *testing.T) {
	tests := map[string]struct {
		providerID string
		want       bool
	}{
		"kwok":      {providerID: "kwok://kwok-default-abc", want: true},
		"no id":     {},
		"other one": {providerID: "aws:///us-east-1a/i-0123"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			node := &v1.Node{Spec: v1.NodeSpec{ProviderID: tc.providerID}}
			if got := IsKarpenterNode(node); got != tc.want {
				t.Errorf("IsKarpenterNode(%q) = %v, want %v", tc.providerID, got, tc.want)
			}
		})
	}
}

func TestStartWithoutBinary(t *testing.T) {
	_, err := Start(context.Background(), &rest.Config{Host: "https://127.0.0.1:1"}, Options{
		Kubeconfig: "kubeconfig", Dir: t.TempDir(), BinDir: t.TempDir(),
	})
	if err == nil || !strings.Contains(err.Error(), "run make karpenter") {
		t.Errorf("Start with an empty bin dir: %v, want an error that says to run make karpenter", err)
	}
}

func TestInstallCRDsWithoutCRDs(t *testing.T) {
	err := InstallCRDs(context.Background(), &rest.Config{Host: "https://127.0.0.1:1"}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "run make karpenter") {
		t.Errorf("InstallCRDs of an empty dir: %v, want an error that says to run make karpenter", err)
	}
}

// TestWriteInstanceTypes: the extra types follow KWOK's own in the shape its
// cloud provider reads, and a name KWOK already has is refused.
func TestWriteInstanceTypes(t *testing.T) {
	bin, dir := t.TempDir(), t.TempDir()
	own := `[{"name":"c-2x-amd64-linux","offerings":[],"architecture":"amd64","operatingSystems":["linux"],"resources":{"cpu":"2"}}]`
	if err := os.WriteFile(filepath.Join(bin, InstanceTypesFileName), []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	gpu := InstanceType{
		Name:      "g-8x-amd64-linux-1gpu",
		Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("1")},
		Price:     1.5,
	}
	path, err := writeInstanceTypes(bin, dir, []InstanceType{gpu})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"name": "c-2x-amd64-linux", "offerings": []any{}, "architecture": "amd64", "operatingSystems": []any{"linux"}, "resources": map[string]any{"cpu": "2"}},
		{
			"name": "g-8x-amd64-linux-1gpu",
			"offerings": []any{map[string]any{
				"Price": 1.5, "Available": true,
				"Requirements": []any{
					map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}},
					map[string]any{"key": "topology.kubernetes.io/zone", "operator": "In", "values": []any{"test-zone-a"}},
				},
			}},
			"architecture": "amd64", "operatingSystems": []any{"linux"},
			"resources": map[string]any{"cpu": "8", "nvidia.com/gpu": "1"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("instance types (-want,+got):\n%s", diff)
	}

	gpu.Name = "c-2x-amd64-linux"
	if _, err := writeInstanceTypes(bin, dir, []InstanceType{gpu}); err == nil {
		t.Error("an instance type named like one of KWOK's was accepted")
	}
	if _, err := writeInstanceTypes(t.TempDir(), dir, []InstanceType{gpu}); err == nil || !strings.Contains(err.Error(), "run make karpenter") {
		t.Errorf("without KWOK's catalogue: %v, want an error that says to run make karpenter", err)
	}
}
