package autoscale

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
)

// TestRunnerWaitingForPairRoomGetsANode is issue 9's stall and its fix,
// with the real Karpenter. A node has room for a runner but not for the
// runner and its workflow pod. Without pair pods, tandem keeps the runner
// pending and Karpenter, which simulates the runner alone, judges it
// schedulable on the existing node: no node is added and the job would
// wait. With pair pods (the shipped default), the runner's pending pair pod
// fits no existing node: Karpenter launches one, and tandem places the
// runner there.
func TestRunnerWaitingForPairRoomGetsANode(t *testing.T) {
	ctx := t.Context()
	const ns = "pair-room"
	if err := controlplane.EnsureNamespace(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	noNodeClaims(t)
	room := v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("8Gi")}
	if _, err := controlplane.CreateNode(ctx, client, "pair-room-n1", room, nil); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.CoreV1().Nodes().Delete(ctx, "pair-room-n1", metav1.DeleteOptions{}) }()
	// 2 of its 3 cpu are taken: the runner (1) fits, with its workflow pod (1 more) it does not.
	filler := newPod(ns, "filler", "2", schedulerName)
	filler.Spec.NodeName = "pair-room-n1"
	if _, err := client.CoreV1().Pods(ns).Create(ctx, filler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claims := &claimWatch{}
	if _, err := claims.list(ctx); err != nil {
		t.Fatal(err)
	}
	before := claims.seen.Clone()

	runner := newPod(ns, "runner", "1", schedulerName)
	runner.Labels = map[string]string{"actions-ephemeral-runner": "True"}
	runner.Annotations = map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1,memory=1Gi"}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, runner, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Without pair pods: Karpenter says the runner fits an existing node.
	off, err := inprocess.Start(ctx, restConfig, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, Args: []string{"pairPods: false"}}))
	if err != nil {
		t.Fatal(err)
	}
	if note := eventNote(t, ns, "runner", "Nominated"); !strings.Contains(note, "node/") || strings.Contains(note, "nodeclaim/") {
		t.Errorf("Karpenter's Nominated event on the runner = %q, want it to name an existing node", note)
	}
	if _, err := claims.list(ctx); err != nil {
		t.Fatal(err)
	}
	if got := claims.seen.Difference(before).UnsortedList(); len(got) != 0 {
		t.Fatalf("NodeClaims %v were created without pair pods: the test cannot tell the stall from its fix", got)
	}
	off.Stop()

	// With pair pods: a node comes, and the runner goes there.
	on, err := inprocess.Start(ctx, restConfig, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer on.Stop()
	started := time.Now()
	claim, node := launched(t, claims)
	var bound string
	poll(t, "tandem binds the runner", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "runner", metav1.GetOptions{})
		bound = p.Spec.NodeName
		return err == nil && bound != "", err
	})
	if bound != node.Name {
		t.Errorf("runner bound to %s, want Karpenter's new node %s", bound, node.Name)
	}
	t.Logf("pair pods on -> NodeClaim %s, node %s Ready, runner bound: %v", claim.GetName(), node.Name, time.Since(started).Round(10*time.Millisecond))
	if note := eventNote(t, ns, "runner-pair", "Nominated"); !strings.Contains(note, "nodeclaim/"+claim.GetName()) {
		t.Errorf("Karpenter's Nominated event on the pair pod = %q, want nodeclaim/%s", note, claim.GetName())
	}
	poll(t, "the pair pod is deleted", 30*time.Second, func() (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "runner-pair", metav1.GetOptions{})
		return err != nil, ignoreFound(err)
	})

	// The runner ends: Karpenter removes its node.
	zero := int64(0)
	for _, name := range []string{"runner", "filler"} {
		if err := client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	removed(t, claim, node)
}
