//go:build !tandem_k8s_1_34

package workflowreservation

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// free counts, per node, the devices of the resource's class that no claim
// has allocated and that the node has to itself, as the allocator would
// use them: devices of another driver (the class's CEL selector), tainted
// ones, ones several nodes reach, partitions sharing counters, and devices
// of an old, incomplete or invalid pool do not count.
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
	// slice is one of pool's (of count slices) at generation.
	slice := func(pool string, generation, count int64, driver string, spec resourceapi.ResourceSliceSpec) *resourceapi.ResourceSlice {
		spec.Driver, spec.Pool = driver, resourceapi.ResourcePool{Name: pool, Generation: generation, ResourceSliceCount: count}
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: spec}
	}
	on := func(node string, names ...string) resourceapi.ResourceSliceSpec {
		return resourceapi.ResourceSliceSpec{NodeName: ptr.To(node), Devices: devices(names...)}
	}
	rack := &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: "rack", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}},
	}}}}
	d := &draRoom{classes: map[v1.ResourceName]*resourceapi.DeviceClass{gpu: class}, matcher: newDeviceMatcher()}
	d.once.Do(func() {})
	d.allocated = &structured.AllocatedState{AllocatedDevices: sets.New(structured.MakeDeviceID("gpu.example.com", "n1", "gpu-1"))}
	d.index(context.Background(), []*resourceapi.ResourceSlice{
		// n1: gpu-0 free, gpu-1 allocated; a NIC; a tainted GPU.
		slice("n1", 1, 1, "gpu.example.com", on("n1", "gpu-0", "gpu-1")),
		slice("n1-nic", 1, 1, "nic.example.com", on("n1", "nic-0")),
		slice("n1-tainted", 1, 1, "gpu.example.com", resourceapi.ResourceSliceSpec{NodeName: ptr.To("n1"), Devices: []resourceapi.Device{
			{Name: "gpu-9", Taints: []resourceapi.DeviceTaint{{Key: "broken", Effect: resourceapi.DeviceTaintEffectNoSchedule}}},
		}}),
		// Reached by several nodes: not counted on any.
		slice("shared", 1, 1, "gpu.example.com", resourceapi.ResourceSliceSpec{AllNodes: ptr.To(true), Devices: devices("gpu-0")}),
		slice("rack-a", 1, 1, "gpu.example.com", resourceapi.ResourceSliceSpec{NodeSelector: rack, Devices: devices("gpu-0", "gpu-1")}),
		// Per device: gpu-0 is n2's, gpu-1 every node's.
		slice("per-device", 1, 1, "gpu.example.com", resourceapi.ResourceSliceSpec{PerDeviceNodeSelection: ptr.To(true), Devices: []resourceapi.Device{
			{Name: "gpu-0", NodeName: ptr.To("n2")},
			{Name: "gpu-1", AllNodes: ptr.To(true)},
		}}),
		// n2: partitions of one GPU, sharing its counters.
		slice("n2-mig", 1, 1, "gpu.example.com", resourceapi.ResourceSliceSpec{NodeName: ptr.To("n2"), Devices: []resourceapi.Device{
			{Name: "mig-0", ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0"}}},
			{Name: "mig-1", ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0"}}},
		}}),
		// n3: generation 2 replaced generation 1's three devices with one.
		slice("n3", 1, 1, "gpu.example.com", on("n3", "gpu-0", "gpu-1", "gpu-2")),
		slice("n3", 2, 1, "gpu.example.com", on("n3", "gpu-3")),
		// n4: one of the pool's two slices is not published yet.
		slice("n4", 1, 2, "gpu.example.com", on("n4", "gpu-0")),
		// n5: the pool names gpu-0 twice.
		slice("n5", 1, 2, "gpu.example.com", on("n5", "gpu-0")),
		slice("n5", 1, 2, "gpu.example.com", on("n5", "gpu-0", "gpu-1")),
	})
	for _, tc := range []struct {
		node string
		want int64
	}{
		{node: "n1", want: 1},
		{node: "n2", want: 1},
		{node: "n3", want: 1},
		{node: "n4", want: 0},
		{node: "n5", want: 0},
		{node: "n6", want: 0},
	} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.node, Labels: map[string]string{"rack": "a"}}}
		got, ok := d.free(node, gpu)
		if !ok || got != tc.want {
			t.Errorf("free(%s) = %d, %v; want %d, true", tc.node, got, ok, tc.want)
		}
	}
	n1 := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if _, ok := d.free(n1, "example.com/other"); ok {
		t.Error("free counted a resource no DeviceClass of the cycle maps")
	}
	var none *draRoom
	if _, ok := none.free(n1, gpu); ok {
		t.Error("a cycle without DRA-backed resources counted devices")
	}
}

// A claim that gives its devices back requeues a pod this plugin turned
// away; one that keeps or gets its allocation does not.
func TestIsSchedulableAfterClaimChange(t *testing.T) {
	allocated := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
	pending := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "runner"}}
	for _, tc := range []struct {
		name     string
		old, new *resourceapi.ResourceClaim
		want     fwk.QueueingHint
	}{
		{name: "allocated claim deleted", old: allocated, want: fwk.Queue},
		{name: "claim deallocated", old: allocated, new: pending, want: fwk.Queue},
		{name: "claim allocated", old: pending, new: allocated, want: fwk.QueueSkip},
		{name: "allocated claim updated", old: allocated, new: allocated, want: fwk.QueueSkip},
		{name: "pending claim deleted", old: pending, want: fwk.QueueSkip},
	} {
		var newObj any
		if tc.new != nil {
			newObj = tc.new
		}
		got, err := isSchedulableAfterClaimChange(klog.Background(), pod, tc.old, newObj)
		if err != nil || got != tc.want {
			t.Errorf("%s: hint = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// A runner's pair needs a free device of the node's own; a pod's own
// request of a DRA-backed resource is left to the DynamicResources plugin
// where nothing of it is held on the node (it may use devices tandem does
// not count), and must fit beside what is held where something is.
func TestFitsCountsDRADevicesWhereTheyAreHeld(t *testing.T) {
	const gpu = v1.ResourceName("example.com/gpu")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("8"), v1.ResourcePods: resource.MustParse("110"),
	}}}
	ni := nodeInfo(node)
	room := func(own bool, free int64) *draRoom {
		d := &draRoom{classes: map[v1.ResourceName]*resourceapi.DeviceClass{gpu: {}}, own: own}
		d.once.Do(func() {})
		d.byNode = map[string]map[v1.ResourceName]deviceCount{"n1": {gpu: {capacity: free}}}
		return d
	}
	need := contract.Amount{MilliCPU: 1000, Scalar: map[v1.ResourceName]int64{gpu: 1}}
	cpuHeld := contract.Amount{MilliCPU: 1000}
	gpuHeld := contract.Amount{MilliCPU: 1000, Scalar: map[v1.ResourceName]int64{gpu: 1}}
	for _, tc := range []struct {
		name     string
		reserved contract.Amount
		dra      *draRoom
		want     bool
	}{
		{name: "a pair, no device counted", reserved: cpuHeld, dra: room(false, 0), want: false},
		{name: "a pair, a device free", reserved: cpuHeld, dra: room(false, 1), want: true},
		{name: "a pair, the free device held", reserved: gpuHeld, dra: room(false, 1), want: false},
		{name: "a pod's own request, nothing of it held", reserved: cpuHeld, dra: room(true, 0), want: true},
		{name: "a pod's own request, the free device held", reserved: gpuHeld, dra: room(true, 1), want: false},
		{name: "a pod's own request, one of two free devices held", reserved: gpuHeld, dra: room(true, 2), want: true},
		{name: "not DRA-backed: the allocatable decides", reserved: cpuHeld, dra: nil, want: false},
	} {
		if got := fits(need, tc.reserved, ni, tc.dra); got != tc.want {
			t.Errorf("%s: fits = %v, want %v", tc.name, got, tc.want)
		}
	}
}
