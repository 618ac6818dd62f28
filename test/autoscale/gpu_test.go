package autoscale

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
	"github.com/tandem-scheduler/tandem/harness/karpenter"
)

const gpu v1.ResourceName = "nvidia.com/gpu"

// gpuInstanceType is the one GPU instance type added to KWOK's catalogue
// (which has none): 8 cpu and one GPU, family g.
var gpuInstanceType = karpenter.InstanceType{
	Name: "g-8x-amd64-linux-1gpu",
	Resources: v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("8"),
		v1.ResourceMemory: resource.MustParse("32Gi"),
		gpu:               resource.MustParse("1"),
	},
	Price: 2,
}

// gpuTaint keeps pods that do not ask for it off the GPU pool's nodes, as
// docs/arc.md tells users to.
var gpuTaint = v1.Taint{Key: string(gpu), Value: "present", Effect: v1.TaintEffectNoSchedule}

// TestGPURunnersGetAGPUNodeEach is issue 41's autoscaled GPU pool, with the
// real Karpenter. Two GPU runners (1 cpu each) whose workflow pods each need
// a GPU arrive together; a cpu node has room for both runners but no GPU,
// and the GPU NodePool's instances have one GPU each. tandem keeps the
// runners off the cpu node, their pair pods (which carry the GPU and the
// runner's toleration) make Karpenter launch two GPU nodes, and tandem puts
// one runner on each: once the first is bound its node's GPU is held for its
// workflow pod, so the second does not fit there although the node's cpu
// does. The first runner's workflow pod (pinned by a required hostname
// affinity, as hooks v0.8 pin it) is then bound to its runner's node, and
// Karpenter removes both nodes once the pods are gone.
func TestGPURunnersGetAGPUNodeEach(t *testing.T) {
	ctx := t.Context()
	const ns = "gpu-runners"
	if err := controlplane.EnsureNamespace(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	noNodeClaims(t)
	// WhenEmpty: a runner alone (1 cpu) would fit the cpu node, and
	// Karpenter could otherwise move it there to consolidate a GPU node.
	pool := karpenter.NodePool{
		Name: "gpu", InstanceFamily: "g", InstanceCPUs: []int{8}, ConsolidationPolicy: "WhenEmpty",
		RegistrationDelay: registrationDelay, Taints: []v1.Taint{gpuTaint},
	}
	if err := karpenter.ApplyNodePool(ctx, dyn, pool); err != nil {
		t.Fatal(err)
	}
	// Also when the test fails: the pods go, then the pool's NodeClaims
	// (Karpenter's finalizer removes their nodes), then the pool, so that
	// the next test's noNodeClaims finds none.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		zero := int64(0)
		_ = client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		if err := karpenter.DeleteNodePool(ctx, dyn, pool.Name); err != nil {
			t.Error(err)
		}
	})
	room := v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("16Gi")}
	if _, err := controlplane.CreateNode(ctx, client, "gpu-runners-cpu", room, nil); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.CoreV1().Nodes().Delete(ctx, "gpu-runners-cpu", metav1.DeleteOptions{}) }()
	claims := &claimWatch{}
	if _, err := claims.list(ctx); err != nil {
		t.Fatal(err)
	}
	before := claims.seen.Clone()

	// The shipped scoring (MostAllocated) ranks the first runner's node
	// first for the second: only the held GPU keeps it off.
	sched, err := inprocess.Start(ctx, restConfig, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, Scoring: "MostAllocated"}))
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Stop()
	tolerate := v1.Toleration{Key: gpuTaint.Key, Operator: v1.TolerationOpEqual, Value: gpuTaint.Value, Effect: gpuTaint.Effect}
	runners := []string{"r1", "r2"}
	for _, name := range runners {
		runner := newPod(ns, name, "1", schedulerName)
		runner.Labels = map[string]string{"actions-ephemeral-runner": "True"}
		runner.Annotations = map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1,memory=1Gi,nvidia.com/gpu=1"}
		runner.Spec.Tolerations = []v1.Toleration{tolerate}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, runner, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	bound := map[string]string{}
	poll(t, "tandem binds both runners", 2*time.Minute, func() (bool, error) {
		for _, name := range runners {
			p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			bound[name] = p.Spec.NodeName
		}
		return bound["r1"] != "" && bound["r2"] != "", nil
	})
	if bound["r1"] == bound["r2"] {
		t.Errorf("both runners were bound to %s, which has one GPU: the first runner's GPU was not held", bound["r1"])
	}
	nodeClaim := map[string]*unstructured.Unstructured{}
	list, err := claims.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range list {
		if before.Has(list[i].GetName()) {
			continue
		}
		name, _, _ := unstructured.NestedString(list[i].Object, "status", "nodeName")
		nodeClaim[name] = &list[i]
	}
	nodes := map[string]*v1.Node{}
	for _, name := range runners {
		node, err := client.CoreV1().Nodes().Get(ctx, bound[name], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[name] = node
		alloc := node.Status.Allocatable[gpu]
		if node.Labels[karpenter.NodePoolLabel] != pool.Name || alloc.Value() != 1 || nodeClaim[node.Name] == nil {
			t.Errorf("runner %s is on node %s (pool %q, %s %s, NodeClaim %v), want a node Karpenter launched in pool %s with one GPU",
				name, node.Name, node.Labels[karpenter.NodePoolLabel], gpu, alloc.String(), nodeClaim[node.Name] != nil, pool.Name)
		}
	}
	if len(nodeClaim) != 2 {
		t.Errorf("Karpenter launched %d nodes, want 2 (one GPU each)", len(nodeClaim))
	}
	if note := eventNote(t, ns, "r1-pair", "Nominated"); note == "" {
		t.Error("Karpenter left no Nominated event on r1's pair pod")
	}

	// The workflow pod claims the GPU held on its runner's node.
	workflow := newPod(ns, "r1-workflow", "1", schedulerName)
	workflow.Labels = map[string]string{"runner-pod": "r1"}
	workflow.Spec.Containers[0].Resources.Requests[gpu] = resource.MustParse("1")
	workflow.Spec.Containers[0].Resources.Limits = v1.ResourceList{gpu: resource.MustParse("1")}
	workflow.Spec.Tolerations = []v1.Toleration{tolerate}
	workflow.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{
				Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{nodes["r1"].Labels[v1.LabelHostname]},
			}},
		}}},
	}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, workflow, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its affinity allows no other node: being bound at all is the claim.
	poll(t, "tandem binds r1's workflow pod", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "r1-workflow", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	})

	zero := int64(0)
	for _, name := range []string{"r1-workflow", "r1", "r2"} {
		if err := client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range runners {
		if claim := nodeClaim[nodes[name].Name]; claim != nil {
			removed(t, claim, nodes[name])
		}
	}
}
