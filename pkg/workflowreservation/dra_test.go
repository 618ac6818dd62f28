//go:build !tandem_k8s_1_34

package workflowreservation

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// free counts, per node, the devices of the resource's class that no claim
// has allocated: slices published for the node by name, for all nodes, for
// nodes a selector picks, and per device; devices of another driver (the
// class's CEL selector) and tainted devices do not count.
func TestDRARoomCountsTheNodesFreeDevices(t *testing.T) {
	const gpu = v1.ResourceName("example.com/gpu")
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "gpu.example.com"`,
		}}}},
	}
	devices := func(names ...string) []resourceapi.Device {
		var out []resourceapi.Device
		for _, n := range names {
			out = append(out, resourceapi.Device{Name: n})
		}
		return out
	}
	slice := func(name, driver string, spec resourceapi.ResourceSliceSpec) *resourceapi.ResourceSlice {
		spec.Driver, spec.Pool = driver, resourceapi.ResourcePool{Name: name, ResourceSliceCount: 1}
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	}
	rack := &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: "rack", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}},
	}}}}
	d := &draRoom{classes: map[v1.ResourceName]*resourceapi.DeviceClass{gpu: class}, matcher: newDeviceMatcher()}
	d.once.Do(func() {})
	d.allocated = &structured.AllocatedState{AllocatedDevices: sets.New(structured.MakeDeviceID("gpu.example.com", "n1", "gpu-1"))}
	d.index(context.Background(), []*resourceapi.ResourceSlice{
		slice("n1", "gpu.example.com", resourceapi.ResourceSliceSpec{NodeName: ptr.To("n1"), Devices: devices("gpu-0", "gpu-1")}),
		slice("n1-nic", "nic.example.com", resourceapi.ResourceSliceSpec{NodeName: ptr.To("n1"), Devices: devices("nic-0")}),
		slice("n1-tainted", "gpu.example.com", resourceapi.ResourceSliceSpec{NodeName: ptr.To("n1"), Devices: []resourceapi.Device{
			{Name: "gpu-9", Taints: []resourceapi.DeviceTaint{{Key: "broken", Effect: resourceapi.DeviceTaintEffectNoSchedule}}},
		}}),
		slice("shared", "gpu.example.com", resourceapi.ResourceSliceSpec{AllNodes: ptr.To(true), Devices: devices("gpu-0")}),
		slice("rack-a", "gpu.example.com", resourceapi.ResourceSliceSpec{NodeSelector: rack, Devices: devices("gpu-0", "gpu-1")}),
		slice("per-device", "gpu.example.com", resourceapi.ResourceSliceSpec{PerDeviceNodeSelection: ptr.To(true), Devices: []resourceapi.Device{
			{Name: "gpu-0", NodeName: ptr.To("n2")},
			{Name: "gpu-1", AllNodes: ptr.To(true)},
		}}),
	})
	node := func(name string, labels map[string]string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	for _, tc := range []struct {
		node *v1.Node
		want int64
	}{
		// gpu-0 of its own (gpu-1 allocated), shared, per-device gpu-1.
		{node: node("n1", nil), want: 3},
		// shared, rack-a's two, per-device gpu-0 and gpu-1.
		{node: node("n2", map[string]string{"rack": "a"}), want: 5},
		// shared and per-device gpu-1.
		{node: node("n3", nil), want: 2},
	} {
		got, ok := d.free(tc.node, gpu)
		if !ok || got != tc.want {
			t.Errorf("free(%s) = %d, %v; want %d, true", tc.node.Name, got, ok, tc.want)
		}
	}
	if _, ok := d.free(node("n1", nil), "example.com/other"); ok {
		t.Error("free counted a resource no DeviceClass of the cycle maps")
	}
	var none *draRoom
	if _, ok := none.free(node("n1", nil), gpu); ok {
		t.Error("a cycle without DRA-backed resources counted devices")
	}
}
