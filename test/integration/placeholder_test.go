package integration

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
	"github.com/tandem-scheduler/tandem/harness/sim/kubelet"
)

// Issue 9, items 1 and 4: with reservationMode Pods, room held for a
// runner's workflow pod is a placeholder pod on the runner's node, so that
// neither the kubelet (a pod pinned with nodeName) nor another scheduler
// (default-scheduler) can take it; the runner's workflow pod, scheduled by
// tandem, gets it. With reservations in memory only, both take the room:
// the first subtest shows what the mode is for.
func TestReservedRoomAgainstOtherSchedulersAndTheKubelet(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		taken bool // the others take the reserved room
	}{
		{mode: "Memory", taken: true},
		{mode: "Pods", taken: false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			// 3 cpu: runner 1 + workflow pod 1, 1 free. The others ask for
			// 1500m: they fit only in the reserved room.
			e := newEnv(t, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, ReservationMode: tc.mode, Args: []string{"reservationEvents: true"}}), map[string]string{"ph-n1": "3"})
			kl := kubelet.New(e.client)
			factory := informers.NewSharedInformerFactory(e.client, 0)
			if err := kl.Start(e.ctx, factory); err != nil {
				t.Fatal(err)
			}
			factory.Start(e.ctx.Done())
			t.Cleanup(factory.Shutdown)
			vanilla, err := inprocess.Start(e.ctx, restConfig, inprocess.Config(inprocess.Profile{SchedulerName: v1.DefaultSchedulerName}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(vanilla.Stop)

			e.runner("r1", "1", "1")
			e.bound("r1")
			hold := contract.PlaceholderName("r1")
			if tc.mode == "Pods" {
				e.poll("placeholder "+hold+" runs", func() (bool, error) { return e.phase(hold) == v1.PodRunning, nil })
				p := e.get(hold)
				if got := p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]; got.Cmp(resource.MustParse("1")) != 0 || p.Spec.NodeName != "ph-n1" {
					t.Errorf("placeholder requests cpu %s on node %q, want 1 on ph-n1", got.String(), p.Spec.NodeName)
				}
			}

			// One after the other: each fits only in the reserved room.
			e.create("pinned", podSpec{cpu: "1500m", node: "ph-n1"})
			if tc.taken {
				e.poll("the kubelet admits the pinned pod", func() (bool, error) { return e.phase("pinned") == v1.PodRunning, nil })
			} else {
				e.poll("the kubelet rejects the pinned pod", func() (bool, error) { return e.phase("pinned") == v1.PodFailed, nil })
				if got := e.get("pinned").Status.Reason; got != "OutOfcpu" {
					t.Errorf("pinned pod rejected for %q, want OutOfcpu", got)
				}
			}
			e.delete("pinned")
			e.create("other", podSpec{cpu: "1500m", mutate: func(p *v1.Pod) { p.Spec.SchedulerName = v1.DefaultSchedulerName }})
			if tc.taken {
				if node := e.bound("other"); node != "ph-n1" {
					t.Fatalf("default-scheduler bound other to %q", node)
				}
				return
			}
			wantContains(t, "other's PodScheduled message (default-scheduler)", e.unschedulable("other"), "Insufficient cpu")

			// The workflow pod, scheduled by tandem, gets the room: at Permit
			// it waits while the placeholder is deleted, so the node's pods,
			// watched as the kubelet watches them, show the placeholder gone
			// before the workflow pod is there. (Another scheduler's pod
			// pending for that room could take it between the delete and
			// the bind; docs/autoscaling.md says so. Not raced here.)
			e.delete("other")
			w, err := e.client.CoreV1().Pods(e.ns).Watch(e.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=ph-n1", ResourceVersion: e.get(hold).ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			e.create("r1-workflow", podSpec{cpu: "1", workflowOf: "r1", onNode: "ph-n1"})
			holdGone := false
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*v1.Pod)
				if !ok {
					t.Fatalf("watch: %v", ev.Object)
				}
				if p.Name == hold && ev.Type == watch.Deleted {
					holdGone = true
				}
				if p.Name == "r1-workflow" {
					if !holdGone {
						t.Fatalf("the node's watch showed the workflow pod (%s) before the placeholder's delete", ev.Type)
					}
					break
				}
			}
			e.poll("the kubelet admits the workflow pod", func() (bool, error) { return e.phase("r1-workflow") == v1.PodRunning, nil })
			wantContains(t, "the workflow pod's Claimed event", e.event("r1-workflow", contract.ReasonClaimed), "r1")
		})
	}
}

// phase returns the pod's phase ("" if it does not exist).
func (e *env) phase(name string) v1.PodPhase {
	e.t.Helper()
	pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return pod.Status.Phase
}

// Placeholders live in the API, so a restart rebuilds them with the
// reservations: one whose runner went while tandem was down goes (no
// garbage collector runs here; the reconciler's sweep stands in for it),
// one deleted while tandem was down comes back.
func TestPlaceholdersAfterRestart(t *testing.T) {
	e := newEnv(t, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, ReservationMode: "Pods"}), map[string]string{"pr-n1": "4"})
	for _, r := range []string{"r1", "r2"} {
		e.runner(r, "500m", "1")
		e.bound(r)
		e.poll("placeholder of "+r+" exists", func() (bool, error) { return e.phase(contract.PlaceholderName(r)) != "", nil })
	}
	e.stopScheduler()
	e.delete("r1")
	e.delete(contract.PlaceholderName("r2"))
	e.startScheduler()

	e.poll("r1's orphaned placeholder is deleted", func() (bool, error) {
		return e.phase(contract.PlaceholderName("r1")) == "", nil
	})
	e.poll("r2's placeholder is recreated", func() (bool, error) {
		return e.phase(contract.PlaceholderName("r2")) != "", nil
	})
	if ref := metav1.GetControllerOf(e.get(contract.PlaceholderName("r2"))); ref == nil || ref.UID != e.get("r2").UID {
		t.Errorf("recreated placeholder's controller = %+v, want runner r2", ref)
	}
}
