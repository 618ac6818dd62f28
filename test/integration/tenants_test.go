package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
)

// Issue 37: every job, and every pod author in any namespace, is a tenant.
// These are the holes a tenant could open in tandem through pods alone, each
// proven on the real apiserver with the scheduler as it ships.

// holdFinalizer keeps a pod terminating until the test removes it.
const holdFinalizer = "tandem.test/hold"

// claimsToBe makes pod look like tandem's pod of the kind label marks,
// standing for the pod owner (of uid): the label, the annotation naming the
// owner and a controller reference to it.
func claimsToBe(pod *v1.Pod, label, ofAnnotation, owner string, uid types.UID) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[label] = "true"
	pod.Annotations = map[string]string{ofAnnotation: owner}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: owner, UID: uid, Controller: ptr.To(true)}}
}

// tenantPod creates a pod in namespace ns that no scheduler places, held by
// holdFinalizer when held; the finalizer goes at the end of the test.
func (e *env) tenantPod(ns, name string, held bool, mutate func(*v1.Pod)) *v1.Pod {
	e.t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{SchedulerName: "nobody", RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "main", Image: "image"}}},
	}
	if held {
		pod.Finalizers = []string{holdFinalizer}
	}
	if mutate != nil {
		mutate(pod)
	}
	created, err := e.client.CoreV1().Pods(ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
	if held {
		e.t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			if _, err := e.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				e.t.Errorf("removing the finalizer of %s/%s: %v", ns, name, err)
			}
			_ = e.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
	}
	return created
}

// tandemPodsOf returns the pods of e's namespace labelled with label that
// name runner in ofAnnotation: its pair pods or placeholders, whatever
// their names.
func (e *env) tandemPodsOf(label, ofAnnotation, runner string) []v1.Pod {
	e.t.Helper()
	list, err := e.client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: label + "=true"})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []v1.Pod
	for _, p := range list.Items {
		if p.Annotations[ofAnnotation] == runner && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// oneTandemPodOf waits until runner has exactly one pod of tandem's of the
// kind label marks (tandemPodsOf) and returns it.
func (e *env) oneTandemPodOf(label, ofAnnotation, runner string) v1.Pod {
	e.t.Helper()
	var pod v1.Pod
	e.poll(runner+" has one pod labelled "+label, func() (bool, error) {
		pods := e.tandemPodsOf(label, ofAnnotation, runner)
		if len(pods) == 1 {
			pod = pods[0]
		}
		return len(pods) == 1, nil
	})
	return pod
}

// Hole 1: a pod in a namespace without runners, labelled as tandem's pair
// pod or placeholder and controlled by a pod there, was taken for tandem's
// own: the workers deleted it, and, held by a finalizer, again at every
// sweep. tandem now writes nothing for such a pod. The workers' queues are
// first in, first out: a pair pod and an orphaned placeholder of the runner
// namespace, queued after the tenant's pods, show that the workers got past
// them.
func TestPodsLabelledAsTandemsElsewhereAreLeftAlone(t *testing.T) {
	e := newEnvWithoutScheduler(t, map[string]string{"tenant-n1": "3"})
	e.config = tandemConfig("runnerNamespaces: [" + e.ns + "]")
	mallory := e.ns + "-mallory"
	if err := controlplane.EnsureNamespace(e.ctx, e.client, mallory); err != nil {
		t.Fatal(err)
	}
	e.startScheduler()

	// Bound (by nodeName): before, tandem deleted a pair pod of a bound
	// runner, and the placeholder of one that is no runner.
	owner := e.tenantPod(mallory, "owner", false, func(p *v1.Pod) { p.Spec.NodeName = "tenant-n1" })
	forged := []*v1.Pod{
		e.tenantPod(mallory, "owner-hold", true, func(p *v1.Pod) {
			claimsToBe(p, contract.PlaceholderLabel, contract.PlaceholderOfAnnotation, owner.Name, owner.UID)
		}),
		e.tenantPod(mallory, "owner-pair", true, func(p *v1.Pod) {
			claimsToBe(p, contract.PairPodLabel, contract.PairOfAnnotation, owner.Name, owner.UID)
		}),
	}

	// After them, in the runner namespace: a placeholder whose runner is
	// gone (tandem deletes it) and a runner that waits for pair room (its
	// pair pod is created, then deleted once it is bound).
	orphan := e.tenantPod(e.ns, "gone-hold", false, func(p *v1.Pod) {
		claimsToBe(p, contract.PlaceholderLabel, contract.PlaceholderOfAnnotation, "gone", "no-such-uid")
	})
	e.runner("r1", "1", "1")
	e.bound("r1")
	e.runner("r2", "1", "1")
	e.oneTandemPodOf(contract.PairPodLabel, contract.PairOfAnnotation, "r2")
	e.poll("the orphaned placeholder is deleted", func() (bool, error) { return e.gone(orphan), nil })
	e.delete("r1")
	e.bound("r2")
	e.poll("r2's pair pod is deleted", func() (bool, error) {
		return len(e.tandemPodsOf(contract.PairPodLabel, contract.PairOfAnnotation, "r2")) == 0, nil
	})

	for _, p := range forged {
		got, err := e.client.CoreV1().Pods(mallory).Get(e.ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.DeletionTimestamp != nil {
			t.Errorf("tandem deleted %s/%s, a pod it never created in a namespace without runners", mallory, p.Name)
		}
	}
}

// Hole 1, the other half: a pod of tandem's being deleted is never deleted
// again. A pair pod held by a finalizer stays terminating after its runner
// is bound; tandem's deletes of pods are counted by the apiserver, and
// another runner's pair pod, created and deleted after it, shows the worker
// got past it.
func TestTerminatingPairPodIsDeletedOnce(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"term-n1": "3"})
	e.runner("r1", "1", "1")
	e.bound("r1")
	e.runner("r2", "1", "1")
	pair := e.oneTandemPodOf(contract.PairPodLabel, contract.PairOfAnnotation, "r2").Name
	// Someone holds it with a finalizer (the runner's job may patch pods).
	patch := []byte(`{"metadata":{"finalizers":["` + holdFinalizer + `"]}}`)
	if _, err := e.client.CoreV1().Pods(e.ns).Patch(e.ctx, pair, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = e.client.CoreV1().Pods(e.ns).Patch(ctx, pair, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	deletesBefore := podDeletes(t, e)
	e.delete("r1")
	e.bound("r2")
	e.poll("r2's pair pod is being deleted", func() (bool, error) { return e.get(pair).DeletionTimestamp != nil, nil })

	// Another round through the worker, after r2 (whose pair pod's runner
	// then goes too): r4 waits for pair room next to r3, then r3 goes and
	// r4 is bound.
	e.delete("r2")
	e.runner("r3", "1", "1")
	e.bound("r3")
	e.runner("r4", "1", "1")
	e.oneTandemPodOf(contract.PairPodLabel, contract.PairOfAnnotation, "r4")
	e.delete("r3")
	e.bound("r4")
	e.poll("r4's pair pod is deleted", func() (bool, error) {
		return len(e.tandemPodsOf(contract.PairPodLabel, contract.PairOfAnnotation, "r4")) == 0, nil
	})
	// r1, r2 and r3 by the test, r2's and r4's pair pods by tandem, once
	// each.
	if got := podDeletes(t, e) - deletesBefore; got != 5 {
		t.Errorf("the apiserver served %v pod deletes, want 5 (the test's 3, one per pair pod)", got)
	}
}

// Hole 2: pair pods and placeholders have names anyone can predict. A pod
// of that name created first made tandem's create fail AlreadyExists for
// good, silently: no pair pod for the autoscalers, no placeholder for the
// kubelet. tandem now creates its pod under a generated name and tells the
// runner.
func TestSquattedPairPodName(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"squat-n1": "3"})
	squatter := e.tenantPod(e.ns, contract.PairPodName("r2"), false, nil)
	e.runner("r1", "1", "1")
	e.bound("r1")
	e.runner("r2", "1", "1")
	pair := e.oneTandemPodOf(contract.PairPodLabel, contract.PairOfAnnotation, "r2")
	if !strings.HasPrefix(pair.Name, squatter.Name+"-") {
		t.Errorf("pair pod %s, want a name generated from %s", pair.Name, squatter.Name)
	}
	wantContains(t, "r2's warning", e.event("r2", contract.ReasonPairPodNameTaken), squatter.Name, "which tandem did not create")
	e.delete("r1")
	e.bound("r2")
	e.poll("r2's pair pod is deleted", func() (bool, error) {
		return len(e.tandemPodsOf(contract.PairPodLabel, contract.PairOfAnnotation, "r2")) == 0, nil
	})
	if e.gone(squatter) {
		t.Error("tandem deleted the pod that had its pair pod's name")
	}
}

// Hole 2 in reservationMode Pods, and hole 3: with its placeholder's name
// taken, a bound runner still gets a placeholder (generated name), and
// tandem-webhook, which looks placeholders up by label, not by name,
// releases it, and a forged one on the runner's node with it, before the
// pinned workflow pod is stored: the kubelet then finds the room free.
func TestSquattedPlaceholderName(t *testing.T) {
	e := newEnv(t, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, ReservationMode: "Pods"}), map[string]string{"squat-n2": "4"})
	e.startWebhook()
	squatter := e.tenantPod(e.ns, contract.PlaceholderName("r1"), false, nil)
	runner := e.runner("r1", "1", "2")
	node := e.bound("r1")
	hold := e.oneTandemPodOf(contract.PlaceholderLabel, contract.PlaceholderOfAnnotation, "r1")
	if hold.Spec.NodeName != node || !strings.HasPrefix(hold.Name, squatter.Name+"-") {
		t.Errorf("placeholder %s on %q, want a name generated from %s on %s", hold.Name, hold.Spec.NodeName, squatter.Name, node)
	}
	wantContains(t, "r1's warning", e.event("r1", contract.ReasonPlaceholderNameTaken), squatter.Name, "which tandem did not create")

	// A forgery that claims to be r1's placeholder too, of its size, on its
	// node: the webhook must not take it for the only one, nor leave it.
	// (The leader would delete it as a duplicate: it is stopped first, so
	// that the webhook alone is proven.)
	e.stopScheduler()
	forged := e.tenantPod(e.ns, "forged", false, func(p *v1.Pod) {
		claimsToBe(p, contract.PlaceholderLabel, contract.PlaceholderOfAnnotation, "r1", runner.UID)
		p.Annotations[contract.PlaceholderSizeAnnotation] = hold.Annotations[contract.PlaceholderSizeAnnotation]
		p.Spec.Containers[0].Resources = *hold.Spec.Containers[0].Resources.DeepCopy()
		p.Spec.NodeName = node
	})
	e.create("r1-workflow", podSpec{cpu: "2", node: node, workflowOf: "r1"})
	for _, p := range []*v1.Pod{&hold, forged} {
		if !e.gone(p) {
			t.Errorf("%s, a placeholder of r1 on its node, is still there when r1's pinned workflow pod was stored", p.Name)
		}
	}
	if e.gone(squatter) {
		t.Error("the pod that had the placeholder's name was deleted")
	}
}

// podDeletes is the apiserver's count of DELETE requests on pods, whatever
// their answer (no test runs in parallel with another).
func podDeletes(t *testing.T, e *env) float64 {
	t.Helper()
	n := 0.0
	for k, v := range apiWrites(t, e.client) {
		if k == "DELETE pods" || strings.HasPrefix(k, "DELETE pods ") {
			n += v
		}
	}
	return n
}

// Hole 3 without the admission policy: a pod that claims to be a runner's
// placeholder, on its node, with its size annotation but requesting
// nothing, next to the real one. The worker keeps one placeholder per
// runner; it kept whichever came first in the informer's index (map order),
// so about half the time it deleted tandem's and kept the forgery, and the
// node held no room. It keeps the one it made and deletes the other.
func TestForgedPlaceholderIsTheOneThatGoes(t *testing.T) {
	e := newEnv(t, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, ReservationMode: "Pods"}), map[string]string{"forged-n1": "4"})
	runner := e.runner("r1", "1", "2")
	node := e.bound("r1")
	hold := e.oneTandemPodOf(contract.PlaceholderLabel, contract.PlaceholderOfAnnotation, "r1")
	for i := range 4 {
		forged := e.tenantPod(e.ns, fmt.Sprintf("forged-%d", i), false, func(p *v1.Pod) {
			claimsToBe(p, contract.PlaceholderLabel, contract.PlaceholderOfAnnotation, "r1", runner.UID)
			p.Annotations[contract.PlaceholderSizeAnnotation] = hold.Annotations[contract.PlaceholderSizeAnnotation]
			p.Spec.NodeName = node
		})
		e.poll("the forgery "+forged.Name+" is deleted", func() (bool, error) { return e.gone(forged), nil })
		if e.gone(&hold) {
			t.Fatalf("tandem deleted its own placeholder %s and not the forgery %s", hold.Name, forged.Name)
		}
	}
}
