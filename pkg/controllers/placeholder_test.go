package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/controllers/placeholder"
	"github.com/tandem-scheduler/tandem/pkg/controllers/podworker"
)

// A placeholder removed by someone else (evicted, preempted, rejected by
// the kubelet) while its reservation still waits is recreated, and the
// runner is told once.
func TestLostPlaceholderIsRecreated(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Req(units("1")).Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	f, c := newTestFeeder(t, withArgs(podsModeArgs()), withObjects(runner))
	f.Placeholders().Recheck = 10 * time.Millisecond

	first := waitForPod(t, c, "r1-hold", func(p *v1.Pod) bool { return p != nil })
	// The fake clientset sets no UIDs or resource versions: count the
	// creates (failed ones included, as the fake records every action).
	creates := func() int {
		n := 0
		for _, a := range c.client.Actions() {
			if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "pods" {
				if p, ok := c.GetObject().(*v1.Pod); ok && p.Name == "r1-hold" {
					n++
				}
			}
		}
		return n
	}
	before := creates()
	if err := c.client.CoreV1().Pods("arc").Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, c, "r1-hold", func(p *v1.Pod) bool { return p != nil && creates() > before })
	var lost int
	for _, e := range c.events() {
		if strings.Contains(e, contract.ReasonPlaceholderLost) {
			lost++
		}
	}
	if lost != 1 {
		t.Errorf("%d %s events, want 1", lost, contract.ReasonPlaceholderLost)
	}
}

// Found in review: a scheduler switched from Pods back to Memory left the
// placeholders of runners bound before, and workflow pods waited behind
// them. It deletes those it finds.
func TestMemoryModeDeletesPlaceholdersItFinds(t *testing.T) {
	runner := runnerPod("r1").Node("n1").Req(units("1")).Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	_, c := newTestFeeder(t, withObjects(runner, placeholderOf(runner, "1")))
	waitForPod(t, c, "r1-hold", func(p *v1.Pod) bool { return p == nil })
}

// The current mode keeps reservations in memory: no placeholder is wanted.
func TestNoPlaceholderInMemoryMode(t *testing.T) {
	runner := runnerPod("r1").Node("n1").Req(units("1")).Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	for mode, want := range map[string]bool{config.ReservationModeMemory: false, config.ReservationModePods: true} {
		t.Run(mode, func(t *testing.T) {
			args := defaultArgs()
			args.ReservationMode = mode
			f, _ := newTestFeeder(t, withArgs(args), withObjects(runner))
			_, hold := f.WantPlaceholder(podworker.RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID})
			if (hold != nil) != want {
				t.Errorf("placeholder wanted = %v, want %v", hold != nil, want)
			}
		})
	}
}

// In reservationMode Pods a bound runner's reservation gets a placeholder on
// its node, of the reservation's size, with the runner's priority and
// tolerations, owned by it and kept from autoscalers' disruption; the
// placeholder goes the moment the runner's workflow pod is created.
func TestPlaceholderLifecycle(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Req(units("1")).Toleration("ci").Annotation(contract.ReservationAnnotation, recordedFor("r1")).Obj()
	runner.Spec.PriorityClassName = "ci-high"
	_, c := newTestFeeder(t, withArgs(podsModeArgs()), withObjects(runner))

	hold := waitForPod(t, c, "r1-hold", func(p *v1.Pod) bool { return p != nil })
	if !contract.IsPlaceholderOf(hold, runner) {
		t.Fatalf("r1-hold is not r1's placeholder: %+v", hold.ObjectMeta)
	}
	if got, want := hold.Spec.Containers[0].Resources.Requests[v1.ResourceCPU], resource.MustParse("1"); got.Cmp(want) != 0 {
		t.Errorf("placeholder requests cpu %s, want the reservation's %s", got.String(), want.String())
	}
	if _, ok := hold.Spec.Containers[0].Resources.Requests[v1.ResourcePods]; ok {
		t.Errorf("placeholder requests %q: not a container resource", v1.ResourcePods)
	}
	if hold.Spec.NodeName != "n1" || hold.Spec.PriorityClassName != "ci-high" || len(hold.Spec.Tolerations) != 1 {
		t.Errorf("placeholder not on the runner's node with its priority and tolerations: %+v", hold.Spec)
	}
	if hold.Annotations[placeholder.SafeToEvictAnnotation] != "false" || hold.Annotations[placeholder.DoNotDisruptAnnotation] != "true" {
		t.Errorf("placeholder annotations %v: autoscalers may remove its node", hold.Annotations)
	}
	if sc := hold.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		hold.Spec.AutomountServiceAccountToken == nil || *hold.Spec.AutomountServiceAccountToken {
		t.Errorf("placeholder runs as root or with a service account token: %+v", hold.Spec)
	}

	wf := workflowPod("r1").Node("n1").Obj()
	if _, err := c.client.CoreV1().Pods("arc").Create(ctx, wf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, c, "r1-hold", func(p *v1.Pod) bool { return p == nil })
}
