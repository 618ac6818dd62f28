//go:build !tandem_k8s_1_34

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
)

// draGPU is the extended resource a DeviceClass maps to DRA devices (KEP-5004,
// DRAExtendedResource: alpha in 1.35, on by default from 1.36, GA in 1.37): a
// pod asks for it like a device plugin's, the node's allocatable does not
// list it, and the scheduler allocates a device of the class for the pod.
const draGPU = "example.com/gpu"

// draDevices publishes n devices of a driver on node, and a DeviceClass that
// maps draGPU to them (gone at the end of the test).
func (e *env) draDevices(node string, n int) {
	e.t.Helper()
	e.draClass()
	e.draSlice(node, n)
}

// draClass creates the DeviceClass that maps draGPU to the devices of
// gpu.example.com (gone at the end of the test).
func (e *env) draClass() {
	e.t.Helper()
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-gpu"},
		Spec: resourceapi.DeviceClassSpec{
			ExtendedResourceName: ptr.To(draGPU),
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: `device.driver == "gpu.example.com"`,
			}}},
		},
	}
	if _, err := e.client.ResourceV1().DeviceClasses().Create(e.ctx, class, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.client.ResourceV1().DeviceClasses().Delete(ctx, class.Name, metav1.DeleteOptions{})
	})
}

// draSlice publishes n devices of gpu.example.com on node, as its DRA
// driver would (gone at the end of the test).
func (e *env) draSlice(node string, n int) {
	e.t.Helper()
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + node},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   "gpu.example.com",
			NodeName: ptr.To(node),
			// A pool of this test's own: a device of an earlier run's pool
			// may still be allocated (no garbage collector deletes claims).
			Pool: resourceapi.ResourcePool{Name: e.ns + "-" + node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range n {
		slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	if _, err := e.client.ResourceV1().ResourceSlices().Create(e.ctx, slice, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.client.ResourceV1().ResourceSlices().Delete(ctx, slice.Name, metav1.DeleteOptions{})
	})
}

// withDRAGPU makes the pod's container ask for one draGPU.
func withDRAGPU(pod *v1.Pod) {
	if pod.Spec.Containers[0].Resources.Requests == nil {
		pod.Spec.Containers[0].Resources.Requests = v1.ResourceList{}
	}
	pod.Spec.Containers[0].Resources.Requests[draGPU] = resource.MustParse("1")
	pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{draGPU: resource.MustParse("1")}
}

// draWorkflowPod creates runner's workflow pod (1 cpu and one draGPU) as
// hooks v0.8 create it, with a required hostname affinity to the runner's
// node, and waits until it is bound there and the scheduler has allocated
// a device to it.
func (e *env) draWorkflowPod(runner, node string) {
	e.t.Helper()
	name := runner + "-workflow"
	e.create(name, podSpec{cpu: "1", workflowOf: runner, mutate: func(pod *v1.Pod) {
		requireNode(node)(pod)
		withDRAGPU(pod)
	}})
	if got := e.bound(name); got != node {
		e.t.Fatalf("workflow pod landed on %q, want its runner's node %s", got, node)
	}
	e.deviceAllocated(name)
}

// deviceAllocated waits until the scheduler has allocated the device of the
// pod's extended resource (status.extendedResourceClaimStatus names its claim).
func (e *env) deviceAllocated(pod string) {
	e.t.Helper()
	e.poll(pod+"'s device is allocated", func() (bool, error) {
		st := e.get(pod).Status.ExtendedResourceClaimStatus
		return st != nil && st.ResourceClaimName != "", nil
	})
}

// A runner whose workflow pod asks for a GPU that is a DRA device lands where
// a device is free, the device is held for the workflow pod against the
// profile's other pods (also after a restart), and the workflow pod gets it.
// Before tandem counted DRA devices, the runner fit no node: the node's
// allocatable does not list the GPU; and a restart dropped the recorded
// reservation as larger than its node. In reservationMode Pods the
// placeholder requests the cpu and not the device, which a pod holds only
// through a claim the scheduler allocated: tandem's accounting holds the
// device, as in Memory mode (before, the placeholder's request took the
// device off the hold and nothing held it).
func TestRunnerWithDRABackedGPU(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.DRAExtendedResource, true)
	for _, tc := range []struct {
		mode string
		// listedAtZero: the GPU node's allocatable lists the resource at 0,
		// as the kubelet leaves it when a device plugin is removed (the
		// move from a device plugin to DRA): the scheduler delegates it to
		// DRA all the same.
		listedAtZero bool
	}{
		{mode: "Memory"}, {mode: "Pods"},
		{mode: "Memory", listedAtZero: true}, {mode: "Pods", listedAtZero: true},
	} {
		name := tc.mode
		if tc.listedAtZero {
			name += "/listed at 0"
		}
		t.Run(name, func(t *testing.T) {
			mode := tc.mode
			suffix := strings.ToLower(mode)
			if tc.listedAtZero {
				suffix += "-zero"
			}
			e := newEnvWithoutScheduler(t, map[string]string{"dra-cpu-" + suffix: "8", "dra-gpu-" + suffix: "8"})
			gpuNode := "dra-gpu-" + suffix
			if tc.listedAtZero {
				node, err := e.client.CoreV1().Nodes().Get(e.ctx, gpuNode, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				node.Status.Capacity[draGPU], node.Status.Allocatable[draGPU] = resource.MustParse("0"), resource.MustParse("0")
				if _, err := e.client.CoreV1().Nodes().UpdateStatus(e.ctx, node, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			e.config = inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, ReservationMode: mode, Args: []string{"reservationEvents: true"}})
			e.startScheduler()
			e.draDevices(gpuNode, 1)

			e.create("r1", podSpec{cpu: "500m", runner: true,
				annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1," + draGPU + "=1"}})
			if got := e.bound("r1"); got != gpuNode {
				t.Fatalf("runner landed on %q, want %s, the node with the device", got, gpuNode)
			}
			if mode == "Pods" {
				hold := contract.PlaceholderName("r1")
				e.poll("placeholder "+hold+" exists", func() (bool, error) {
					_, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, hold, metav1.GetOptions{})
					return err == nil, nil
				})
				requests := e.get(hold).Spec.Containers[0].Resources.Requests
				if cpu := requests[v1.ResourceCPU]; cpu.Cmp(resource.MustParse("1")) != 0 {
					t.Errorf("placeholder requests cpu %s, want 1", cpu.String())
				}
				if gpu, ok := requests[draGPU]; ok {
					t.Errorf("placeholder requests %s %s, which it cannot hold without a claim", gpu.String(), draGPU)
				}
			}

			// The one device is held for r1's workflow pod: another pod of
			// the profile asking for a GPU waits, also once tandem has
			// restarted.
			e.create("other-gpu", podSpec{cpu: "100m", mutate: withDRAGPU})
			wantContains(t, "pending message", e.unschedulable("other-gpu"), contract.ErrReasonRoomReserved)
			e.stopScheduler()
			e.startScheduler()
			e.create("other-gpu-2", podSpec{cpu: "100m", mutate: withDRAGPU})
			wantContains(t, "pending message after a restart", e.unschedulable("other-gpu-2"), contract.ErrReasonRoomReserved)

			e.draWorkflowPod("r1", gpuNode)
			// The device is the workflow pod's now: the others still wait,
			// for the device and no longer for a reservation.
			e.poll("other-gpu waits for a device, not for reserved room", func() (bool, error) {
				pod := e.get("other-gpu")
				if pod.Spec.NodeName != "" {
					t.Fatalf("other-gpu was bound to %s, which has no free device", pod.Spec.NodeName)
				}
				for _, c := range pod.Status.Conditions {
					if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && !strings.Contains(c.Message, contract.ErrReasonRoomReserved) {
						return true, nil
					}
				}
				return false, nil
			})
		})
	}
}

// A runner that waits for a free DRA device is tried again as soon as one
// is published: the node's allocatable never shows DRA devices, and no
// other plugin turned the runner away (it has no claim), so without
// tandem's own ResourceSlice event it waited for the scheduler's flush of
// unschedulable pods (5 minutes).
func TestRunnerWaitsForADRADevice(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.DRAExtendedResource, true)
	e := newEnv(t, tandemConfig(), map[string]string{"dra-late": "8"})
	e.draClass()
	e.create("r1", podSpec{cpu: "500m", runner: true,
		annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1," + draGPU + "=1"}})
	wantContains(t, "pending message", e.unschedulable("r1"), "no node has room for both")
	e.draSlice("dra-late", 1)
	if got := e.bound("r1"); got != "dra-late" {
		t.Fatalf("runner landed on %q, want dra-late", got)
	}
}

// Preemption treats a held device as it treats held cpu: a low-priority
// idle runner holding the node's one device is a victim, its reservation
// goes with it, and the higher-priority pod gets the device; a runner of
// the pod's own priority keeps it.
func TestPreemptionAndAHeldDRADevice(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.DRAExtendedResource, true)
	e := newEnv(t, tandemConfig(), map[string]string{"dra-pe": "8"})
	e.priorityClasses()
	e.draDevices("dra-pe", 1)
	runner := func(name, class string) {
		e.create(name, podSpec{cpu: "500m", runner: true, mutate: withPriority(class),
			annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1," + draGPU + "=1"}})
	}
	gpuPod := func(name, class string) {
		e.create(name, podSpec{cpu: "100m", mutate: func(pod *v1.Pod) {
			withPriority(class)(pod)
			withDRAGPU(pod)
		}})
	}

	runner("critical", "tandem-test-high")
	e.bound("critical")
	gpuPod("other", "tandem-test-high")
	wantContains(t, "other's PodScheduled message", e.unschedulable("other"), contract.ErrReasonRoomReserved)
	if got := e.get("other").Status.NominatedNodeName; got != "" {
		t.Errorf("other was nominated to %s, where only a runner of its own priority holds the device", got)
	}
	e.delete("other")
	e.delete("critical")

	runner("warm", "tandem-test-low")
	e.bound("warm")
	gpuPod("urgent", "tandem-test-high")
	if got := e.bound("urgent"); got != "dra-pe" {
		t.Fatalf("urgent landed on %q", got)
	}
	if _, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, "warm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("warm runner still there after the preemption (err %v)", err)
	}
	e.deviceAllocated("urgent")
}

// TestFailoverKeepsAHeldDRADevice: a standby tandem-scheduler, running
// (its informers watching) since before the runner came, takes over with a
// DRA device held for a workflow pod that has not come yet: another GPU pod
// of the profile waits with RoomReserved, and the workflow pod gets the
// device. Two tandem-scheduler processes (bin/) with leader election on a
// lease of the test's own.
func TestFailoverKeepsAHeldDRADevice(t *testing.T) {
	e := newEnvWithoutScheduler(t, map[string]string{"dra-fo-cpu": "8", "dra-fo-gpu": "8"})
	const gpuNode = "dra-fo-gpu"
	e.draDevices(gpuNode, 1)
	e.ensureAuthenticationConfigMap()
	lease := e.ns
	config := inprocess.Config(inprocess.Profile{
		SchedulerName: schedulerName, Tandem: true, Args: []string{"reservationEvents: true"},
		LeaderElection: &inprocess.LeaderElection{
			ResourceName: lease, ResourceNamespace: metav1.NamespaceSystem,
			// kube-scheduler's lease and deadline, so that a loaded machine
			// does not lose the lease mid-test; the stopped leader releases
			// it, and the standby retries every half second.
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 500 * time.Millisecond,
		},
	})
	dir := t.TempDir()
	// The gate is alpha in 1.35 (on by default from 1.36, GA in 1.37).
	args := []string{"--config=", "--feature-gates=DRAExtendedResource=true"}
	kubeconfig := controlPlane.KubeconfigPath()
	first := startReplica(t, e.ctx, "tandem-scheduler-a", dir, args, []byte(config), kubeconfig)
	if got, _ := e.leaderOfLease(metav1.NamespaceSystem, lease, []*replica{first}, nil); got != first {
		t.Fatalf("leader = %v, want %s", got, first.name)
	}
	standby := startReplica(t, e.ctx, "tandem-scheduler-b", dir, args, []byte(config), kubeconfig)

	e.create("r1", podSpec{cpu: "500m", runner: true,
		annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1," + draGPU + "=1"}})
	if got := e.bound("r1"); got != gpuNode {
		t.Fatalf("runner landed on %q, want %s, the node with the device", got, gpuNode)
	}
	if acquiredLease(standby.log(t), metav1.NamespaceSystem, lease) {
		t.Fatalf("%s acquired the lease while %s held it", standby.name, first.name)
	}

	if err := first.p.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.leaderOfLease(metav1.NamespaceSystem, lease, []*replica{standby}, first); got != standby {
		t.Fatalf("leader after failover = %v, want %s", got, standby.name)
	}
	e.create("other-gpu", podSpec{cpu: "100m", mutate: withDRAGPU})
	wantContains(t, "other-gpu's pending message after the failover", e.unschedulable("other-gpu"), contract.ErrReasonRoomReserved)

	e.draWorkflowPod("r1", gpuNode)
	e.event("r1-workflow", contract.ReasonClaimed)
}
