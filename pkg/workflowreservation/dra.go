//go:build !tandem_k8s_1_34

package workflowreservation

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
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
// the resource are the devices of the class that are the node's own and
// that no claim has allocated (close to the count NodeResourcesFit scores
// DRA-backed resources by; index says what is left out); the reservations
// held there are counted against them as against any other resource.
//
// What this does not cover: devices that two DeviceClasses share are
// counted for each (a pod of one class can take a device held for the
// other's); a pod whose own ResourceClaims ask for devices is not kept off
// held ones; devices requested through the hook template's resourceClaims
// are not sized or held (docs/arc.md); devices that several nodes reach are
// never counted, so a runner whose workflow pod needs one waits.

// draRoom is what PreFilter found of the DRA devices behind the extended
// resources a pod asks for (a runner: with its workflow pod), for Filter,
// which may run on many nodes at once. The devices are listed by the first
// Filter that needs them: a node whose allocatable lists the resource (a
// device plugin's) never does.
type draRoom struct {
	// classes: the DeviceClass of each DRA-backed resource asked for.
	classes map[v1.ResourceName]*resourceapi.DeviceClass
	// own: the resources are the pod's own request, which the
	// DynamicResources plugin checks against the node's devices (not a
	// runner's pair, of which it sees only the runner).
	own     bool
	manager fwk.SharedDRAManager
	matcher *deviceMatcher

	once sync.Once
	// byNode: per node name, per resource, the node's own devices.
	byNode map[string]map[v1.ResourceName]deviceCount
	// allocated is nil if the devices could not be listed.
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
// resource asked for). own: need is the pod's own request.
func (pl *WorkflowReservation) draRoomFor(need contract.Amount, own bool) *draRoom {
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
	return &draRoom{classes: classes, own: own, manager: manager, matcher: pl.devices}
}

// list counts the devices of the cycle's classes per node, once. If they
// cannot be listed, every node counts as without a free device this cycle
// (the error is logged; the pod is tried again).
func (d *draRoom) list() {
	logger := klog.Background()
	ctx := context.Background()
	var allocated *structured.AllocatedState
	// The claim tracker fails a read that races a change to it; the
	// DynamicResources plugin tries again too.
	err := wait.PollUntilContextTimeout(ctx, time.Millisecond, time.Second, true, func(context.Context) (bool, error) {
		var err error
		allocated, err = d.manager.ResourceClaims().GatherAllocatedState()
		return err == nil && allocated != nil, nil
	})
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

// index counts, per node, the devices of the cycle's classes that belong
// to that node alone, as the scheduler's allocator would see them:
//   - only the slices of a pool's newest generation, and none of a pool
//     whose slices are not all published yet or that names a device twice
//     (the allocator uses no device of an incomplete or invalid pool);
//   - only devices of one node (the slice's nodeName, or with per-device
//     node selection the device's): a device that several nodes reach (all
//     nodes, a node selector) could be held on each of them at once, so it
//     is not counted;
//   - no device that consumes shared counters (partitions of one physical
//     device, which exclude each other);
//   - no device tainted NoSchedule or NoExecute (count).
//
// So a node may look fuller than the allocator finds it, never emptier.
func (d *draRoom) index(ctx context.Context, slices []*resourceapi.ResourceSlice) {
	type poolID struct{ driver, pool string }
	type device struct {
		node   string
		slice  *resourceapi.ResourceSlice
		device *resourceapi.Device
	}
	type pool struct {
		generation, slices, want int64
		names                    sets.Set[string]
		devices                  []device
		invalid                  bool
	}
	pools := map[poolID]*pool{}
	for _, s := range slices {
		id := poolID{s.Spec.Driver, s.Spec.Pool.Name}
		switch p := pools[id]; {
		case p == nil || s.Spec.Pool.Generation > p.generation:
			pools[id] = &pool{generation: s.Spec.Pool.Generation, slices: 1, want: s.Spec.Pool.ResourceSliceCount, names: sets.New[string]()}
		case s.Spec.Pool.Generation == p.generation:
			p.slices++
		}
	}
	for _, s := range slices {
		p := pools[poolID{s.Spec.Driver, s.Spec.Pool.Name}]
		if s.Spec.Pool.Generation != p.generation {
			continue
		}
		perDevice := ptr.Deref(s.Spec.PerDeviceNodeSelection, false)
		for i := range s.Spec.Devices {
			dev := &s.Spec.Devices[i]
			if p.names.Has(dev.Name) {
				p.invalid = true
			}
			p.names.Insert(dev.Name)
			node := ptr.Deref(s.Spec.NodeName, "")
			if perDevice {
				node = ptr.Deref(dev.NodeName, "")
			}
			if node == "" || len(dev.ConsumesCounters) > 0 {
				continue
			}
			p.devices = append(p.devices, device{node: node, slice: s, device: dev})
		}
	}
	d.byNode = map[string]map[v1.ResourceName]deviceCount{}
	for _, p := range pools {
		if p.invalid || p.slices != p.want {
			continue
		}
		for _, dev := range p.devices {
			counts := d.byNode[dev.node]
			if counts == nil {
				counts = map[v1.ResourceName]deviceCount{}
				d.byNode[dev.node] = counts
			}
			d.count(ctx, counts, dev.slice, dev.device)
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

// maps reports whether name is a DRA-backed resource of this cycle.
func (d *draRoom) maps(name v1.ResourceName) bool {
	return d != nil && d.classes[name] != nil
}

// free returns how many devices behind name node has that no claim has
// allocated, and false if name is not a DRA-backed resource of this cycle.
func (d *draRoom) free(node *v1.Node, name v1.ResourceName) (int64, bool) {
	if !d.maps(name) {
		return 0, false
	}
	d.once.Do(d.list)
	c := d.byNode[node.Name][name]
	return c.capacity - c.allocated, true
}

// draEvents are the events that can free DRA devices for a pod this plugin
// turned away for want of them: devices published (a new node's driver
// publishes its slices after the node appears, and the node's allocatable
// never shows them), a DeviceClass created or changed, and claims
// deallocated or deleted. A runner has no
// claim of its own, so the DynamicResources plugin, which watches these
// too, never rejects it: without them the runner would wait for the
// scheduler's periodic flush.
func (pl *WorkflowReservation) draEvents() []fwk.ClusterEventWithHint {
	if !pl.dra {
		return nil
	}
	queue := func(klog.Logger, *v1.Pod, any, any) (fwk.QueueingHint, error) { return fwk.Queue, nil }
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: exceptPairPods(queue)},
		{Event: fwk.ClusterEvent{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: exceptPairPods(queue)},
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: exceptPairPods(isSchedulableAfterClaimChange)},
	}
}

// isSchedulableAfterClaimChange queues the pod when a claim gives its
// devices back: deleted or deallocated while allocated.
func isSchedulableAfterClaimChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	old, updated, err := schedutil.As[*resourceapi.ResourceClaim](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if old == nil || old.Status.Allocation == nil || (updated != nil && updated.Status.Allocation != nil) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("A claim gave its devices back, DRA devices may be free", "pod", klog.KObj(pod), "claim", klog.KObj(old))
	return fwk.Queue, nil
}
