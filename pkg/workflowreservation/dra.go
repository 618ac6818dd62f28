//go:build !tandem_k8s_1_34

package workflowreservation

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// Extended resources backed by DRA devices (KEP-5004, DRAExtendedResource:
// alpha in 1.34 and 1.35, on by default from 1.36, GA in 1.37). A
// DeviceClass with spec.extendedResourceName maps an extended resource to
// its devices: a pod asks for "nvidia.com/gpu: 1" as from a device plugin,
// the node's allocatable need not list it, and the scheduler's
// DynamicResources plugin allocates one device of the class to the pod.
// NodeResourcesFit leaves such a resource to that plugin on a node whose
// allocatable does not list it; so does this plugin, except that it must
// also know whether a node has the devices for a runner's workflow pod,
// which does not exist yet, and hold them for it. A node's free units of
// the resource are the devices of the class on the node that no claim has
// allocated (the count NodeResourcesFit scores DRA-backed resources by);
// the reservations held there are counted against them as against any
// other resource.
//
// What this does not cover: devices that two DeviceClasses share are
// counted for each (a pod of one class can take a device held for the
// other's), and devices requested through ResourceClaims of the pod's own
// (the hook template's resourceClaims) are not sized or held (docs/arc.md).

// draRoom is what PreFilter found of the DRA devices behind the extended
// resources a pod asks for (a runner: with its workflow pod), for Filter,
// which may run on many nodes at once. The devices are listed by the first
// Filter that needs them: a node whose allocatable lists the resource (a
// device plugin's) never does.
type draRoom struct {
	// classes: the DeviceClass of each DRA-backed resource asked for.
	classes map[v1.ResourceName]*resourceapi.DeviceClass
	manager fwk.SharedDRAManager
	matcher *deviceMatcher

	once sync.Once
	// byNode: per node name, per resource, the devices of slices published
	// for that node by name.
	byNode map[string]map[v1.ResourceName]deviceCount
	// elsewhere: slices for all nodes or for nodes chosen by a selector,
	// matched against each node as it is filtered.
	elsewhere []*resourceapi.ResourceSlice
	allocated *structured.AllocatedState
}

// deviceCount is how many devices of a class a node has, and how many of
// them a claim has allocated.
type deviceCount struct{ capacity, allocated int64 }

// deviceMatcher tells whether a device is of a class (its CEL selectors).
type deviceMatcher struct{ cache *cel.Cache }

func newDeviceMatcher() *deviceMatcher {
	return &deviceMatcher{cache: cel.NewCache(10, cel.Features{})}
}

func (m *deviceMatcher) matches(ctx context.Context, class *resourceapi.DeviceClass, driver string, device *resourceapi.Device) (bool, error) {
	for _, selector := range class.Spec.Selectors {
		if selector.CEL == nil {
			continue
		}
		result := m.cache.GetOrCompile(selector.CEL.Expression)
		if result.Error != nil {
			return false, result.Error
		}
		ok, _, err := result.DeviceMatches(ctx, cel.Device{Driver: driver, Attributes: device.Attributes, Capacity: device.Capacity})
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// draEnabled reports whether the scheduler delegates extended resources to
// DRA: the feature gate on and a DRA manager in the handle.
func draEnabled(h fwk.Handle) bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) && h.SharedDRAManager() != nil
}

// draRoomFor returns the DeviceClasses that map need's extended resources to
// DRA devices, or nil if none does (the usual case: one lookup per extended
// resource asked for).
func (pl *WorkflowReservation) draRoomFor(need contract.Amount) *draRoom {
	if len(need.Scalar) == 0 || !pl.dra {
		return nil
	}
	manager := pl.handle.SharedDRAManager()
	var classes map[v1.ResourceName]*resourceapi.DeviceClass
	for name := range need.Scalar {
		if class := manager.DeviceClassResolver().GetDeviceClass(name); class != nil {
			if classes == nil {
				classes = map[v1.ResourceName]*resourceapi.DeviceClass{}
			}
			classes[name] = class
		}
	}
	if classes == nil {
		return nil
	}
	return &draRoom{classes: classes, manager: manager, matcher: pl.devices}
}

// list counts the devices of the cycle's classes per node, once. A device
// that cannot be listed or matched counts for nothing: nodes may then look
// fuller than they are, never emptier, and the error is logged.
func (d *draRoom) list() {
	logger := klog.Background()
	ctx := context.Background()
	allocated, err := d.manager.ResourceClaims().GatherAllocatedState()
	if err != nil {
		logger.Error(err, "Listing allocated DRA devices; DRA-backed extended resources count as full this cycle")
		return
	}
	slices, err := d.manager.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		logger.Error(err, "Listing ResourceSlices; DRA-backed extended resources count as full this cycle")
		return
	}
	d.allocated = allocated
	d.index(ctx, slices)
}

// index sorts the slices by node and counts the devices of those
// published for one node by name.
func (d *draRoom) index(ctx context.Context, slices []*resourceapi.ResourceSlice) {
	d.byNode = map[string]map[v1.ResourceName]deviceCount{}
	for _, slice := range slices {
		node := ptr.Deref(slice.Spec.NodeName, "")
		if node == "" || ptr.Deref(slice.Spec.PerDeviceNodeSelection, false) {
			d.elsewhere = append(d.elsewhere, slice)
			continue
		}
		counts := d.byNode[node]
		if counts == nil {
			counts = map[v1.ResourceName]deviceCount{}
			d.byNode[node] = counts
		}
		for i := range slice.Spec.Devices {
			d.count(ctx, counts, slice, &slice.Spec.Devices[i])
		}
	}
}

// count adds device to counts under every resource whose class it is of.
// A device tainted NoSchedule or NoExecute is not counted: the workflow pod
// may not tolerate it.
func (d *draRoom) count(ctx context.Context, counts map[v1.ResourceName]deviceCount, slice *resourceapi.ResourceSlice, device *resourceapi.Device) {
	for _, taint := range device.Taints {
		if taint.Effect == resourceapi.DeviceTaintEffectNoSchedule || taint.Effect == resourceapi.DeviceTaintEffectNoExecute {
			return
		}
	}
	for name, class := range d.classes {
		ok, err := d.matcher.matches(ctx, class, slice.Spec.Driver, device)
		if err != nil {
			klog.Background().V(2).Info("Device cannot be matched against its DeviceClass; not counted", "deviceClass", class.Name, "driver", slice.Spec.Driver, "pool", slice.Spec.Pool.Name, "device", device.Name, "err", err)
			continue
		}
		if !ok {
			continue
		}
		c := counts[name]
		c.capacity++
		if structured.IsDeviceAllocated(structured.MakeDeviceID(slice.Spec.Driver, slice.Spec.Pool.Name, device.Name), d.allocated) {
			c.allocated++
		}
		counts[name] = c
	}
}

// free returns how many devices behind name node has that no claim has
// allocated, and false if name is not a DRA-backed resource of this cycle.
func (d *draRoom) free(node *v1.Node, name v1.ResourceName) (int64, bool) {
	if d == nil || d.classes[name] == nil {
		return 0, false
	}
	d.once.Do(d.list)
	if d.allocated == nil {
		return 0, true
	}
	c := d.byNode[node.Name][name]
	if len(d.elsewhere) > 0 {
		counts := map[v1.ResourceName]deviceCount{name: c}
		for _, slice := range d.elsewhere {
			d.countOn(node, slice, counts)
		}
		c = counts[name]
	}
	return c.capacity - c.allocated, true
}

// countOn counts the devices of a slice not published for one node by name
// that node may use. A slice or device that cannot be matched counts for
// nothing: the node may then look fuller than it is, never emptier.
func (d *draRoom) countOn(node *v1.Node, slice *resourceapi.ResourceSlice, counts map[v1.ResourceName]deviceCount) {
	ctx := context.Background()
	if !ptr.Deref(slice.Spec.PerDeviceNodeSelection, false) {
		if ok, err := structured.NodeMatches(structured.Features{}, node, ptr.Deref(slice.Spec.NodeName, ""), ptr.Deref(slice.Spec.AllNodes, false), slice.Spec.NodeSelector); err != nil || !ok {
			if err != nil {
				klog.Background().V(4).Info("ResourceSlice's node selection cannot be matched; its devices are not counted", "slice", slice.Name, "err", err)
			}
			return
		}
		for i := range slice.Spec.Devices {
			d.count(ctx, counts, slice, &slice.Spec.Devices[i])
		}
		return
	}
	for i := range slice.Spec.Devices {
		device := &slice.Spec.Devices[i]
		if ok, err := structured.NodeMatches(structured.Features{}, node, ptr.Deref(device.NodeName, ""), ptr.Deref(device.AllNodes, false), device.NodeSelector); err != nil || !ok {
			continue
		}
		d.count(ctx, counts, slice, device)
	}
}
