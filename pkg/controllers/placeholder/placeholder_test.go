package placeholder

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/controllers/podworker"
	"github.com/tandem-scheduler/tandem/pkg/internal/tandemtest"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
)

var (
	runnerPod = tandemtest.RunnerPod
	units     = tandemtest.Units
)

// placeholderOf builds runner's placeholder holding cpu on n1, as the worker
// would.
func placeholderOf(runner *v1.Pod, cpu string) *v1.Pod {
	p := For(runner, "n1", contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}), "pause:3.10")
	p.UID = types.UID(p.Name)
	return p
}

// Found by the simulator (tandem-pods, autoscale-novolume.yaml): a workflow
// pod was bound next to its runner's placeholder, which the worker had just
// created and the informer did not show yet, so Permit did not wait for it;
// for 41 ms the node held both. Permit's yield must find a placeholder the
// informer does not show, and no placeholder may be created once it yielded.
func TestYieldFindsAPlaceholderTheInformerDoesNotShowYet(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Req(units("1")).Obj()
	client := fake.NewClientset(runner)
	// An indexer no informer feeds: the placeholder's create is not shown.
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{Index: IndexFunc})
	want := placeholderOf(runner, "1")
	p := New(client, indexer, leadership.Leading(), func(*v1.Pod, string, string, string) {},
		func(podworker.RunnerKey) (*v1.Pod, *v1.Pod) { return runner, want.DeepCopy() })
	key := podworker.RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}
	if err := p.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("arc").Get(ctx, want.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the placeholder was not created: %v", err)
	}

	p.StartYield(runner.UID)
	hold, err := p.Yield(ctx, types.NamespacedName{Namespace: "arc", Name: "r1"}, runner.UID)
	if err != nil || hold == nil {
		t.Fatalf("yield = %v, %v; want the placeholder the create returned", hold, err)
	}
	if _, err := client.CoreV1().Pods("arc").Get(ctx, want.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the placeholder still exists after yield: %v", err)
	}
	if err := p.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("arc").Get(ctx, want.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a placeholder was created for a runner whose workflow pod is at Permit: %v", err)
	}
	p.Unyield(types.NamespacedName{Namespace: "arc", Name: "r1"}, runner.UID)
	if err := p.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("arc").Get(ctx, want.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("no placeholder after the workflow pod's Unreserve: %v", err)
	}
}

// Found by the simulator (tandem-pods, autoscale-nodename.yaml, 2 of 24 jobs
// failed OutOfcpu): a delete with grace 0 reaches the informer first as an
// update that sets deletionTimestamp. The worker took the placeholder
// tandem-webhook was deleting for a pinned workflow pod for a wrong one,
// "deleted" it and created a new one 17 ms later, before the informer showed
// the workflow pod; the kubelet then rejected the workflow pod. A placeholder
// being deleted is left to go, and its runner gets no new one before the
// loss recheck.
func TestPlaceholderBeingDeletedIsNotReplaced(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Req(units("1")).Obj()
	going := placeholderOf(runner, "1")
	now := metav1.Now()
	going.DeletionTimestamp = &now
	client := fake.NewClientset(runner, going)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{Index: IndexFunc})
	if err := indexer.Add(going); err != nil {
		t.Fatal(err)
	}
	p := New(client, indexer, leadership.Leading(), func(*v1.Pod, string, string, string) {},
		func(podworker.RunnerKey) (*v1.Pod, *v1.Pod) { return runner, placeholderOf(runner, "1") })
	p.Recheck = time.Hour
	key := podworker.RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}
	if err := p.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	// The delete goes through; the informer shows it.
	if err := client.CoreV1().Pods("arc").Delete(ctx, going.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := indexer.Delete(going); err != nil {
		t.Fatal(err)
	}
	p.Gone(going)
	if err := p.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	var creates, deletes int
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "create":
			creates++
		case "delete":
			deletes++
		}
	}
	if creates != 0 || deletes != 1 {
		t.Errorf("%d creates and %d deletes, want none and the test's own: the worker replaced a placeholder someone else was deleting", creates, deletes)
	}
}

// Found in review: a placeholder the kubelet rejected (Failed) still holds
// its name, and the scheduler's informer, which drops terminal pods, never
// shows it: every create failed AlreadyExists until the runner ended. The
// failed one is deleted and the placeholder created anew.
func TestFailedPlaceholderIsReplaced(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Req(units("1")).Obj()
	failed := placeholderOf(runner, "1")
	failed.Status.Phase = v1.PodFailed
	failed.Status.Reason = "OutOfcpu"
	client := fake.NewClientset(runner, failed)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{Index: IndexFunc})
	p := New(client, indexer, leadership.Leading(), func(*v1.Pod, string, string, string) {},
		func(podworker.RunnerKey) (*v1.Pod, *v1.Pod) { return runner, placeholderOf(runner, "1") })
	key := podworker.RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}
	if err := p.sync(ctx, key); err == nil {
		t.Fatal("the first sync met the failed placeholder's name and reported nothing")
	}
	if err := p.sync(ctx, key); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	got, err := client.CoreV1().Pods("arc").Get(ctx, failed.Name, metav1.GetOptions{})
	if err != nil || got.Status.Phase == v1.PodFailed {
		t.Fatalf("placeholder after the retry: %+v, %v; want a new one", got.Status, err)
	}
}

// Issue 20: a placeholder the kubelet rejects again and again (another
// scheduler or a DaemonSet took the room) was re-created every 2 s for as
// long as its runner lived, each time a create, a get, a delete and events,
// and the placeholders it deleted without the informer showing them stayed
// in p.deleting for ever. Each loss now doubles the wait before the next
// placeholder, up to maxLostBackoff; a placeholder seen running resets it;
// nothing is kept once the runner is gone.
func TestRejectedPlaceholderBacksOff(t *testing.T) {
	ctx := context.Background()
	runner := runnerPod("r1").Node("n1").Req(units("1")).Obj()
	client := fake.NewClientset(runner)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{Index: IndexFunc})
	gone := false
	p := New(client, indexer, leadership.Leading(), func(*v1.Pod, string, string, string) {},
		func(podworker.RunnerKey) (*v1.Pod, *v1.Pod) {
			if gone {
				return nil, nil
			}
			return runner, placeholderOf(runner, "1")
		})
	fc := clocktesting.NewFakeClock(time.Now())
	p.Clock, p.Recheck = fc, time.Second
	key := podworker.RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}
	exists := func() bool {
		_, err := client.CoreV1().Pods("arc").Get(ctx, placeholderOf(runner, "1").Name, metav1.GetOptions{})
		return err == nil
	}
	if err := p.sync(ctx, key); err != nil || !exists() {
		t.Fatalf("first sync: %v, placeholder exists %v", err, exists())
	}
	// The kubelet rejects it (Failed), which the scheduler's informer shows
	// as a delete; the pod keeps its name until the worker deletes it.
	reject := func() {
		t.Helper()
		hold, err := client.CoreV1().Pods("arc").Get(ctx, placeholderOf(runner, "1").Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hold.Status.Phase = v1.PodFailed
		if _, err := client.CoreV1().Pods("arc").UpdateStatus(ctx, hold, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		p.Gone(hold)
	}
	recreatedAfter := func(wait time.Duration) {
		t.Helper()
		fc.Step(wait - time.Millisecond)
		if err := p.sync(ctx, key); err != nil {
			t.Fatalf("sync before the backoff ended: %v", err)
		}
		if got, _ := client.CoreV1().Pods("arc").Get(ctx, placeholderOf(runner, "1").Name, metav1.GetOptions{}); got == nil || got.Status.Phase != v1.PodFailed {
			t.Fatalf("placeholder replaced before its backoff of %s ended", wait)
		}
		fc.Step(time.Millisecond)
		for range 2 { // the first meets the rejected one's name and deletes it
			_ = p.sync(ctx, key)
		}
		if got, err := client.CoreV1().Pods("arc").Get(ctx, placeholderOf(runner, "1").Name, metav1.GetOptions{}); err != nil || got.Status.Phase == v1.PodFailed {
			t.Fatalf("placeholder not replaced once its backoff of %s ended: %v", wait, err)
		}
	}
	for wait := time.Second; wait < maxLostBackoff; wait *= 2 { // 1 s, 2 s, ... 256 s
		reject()
		recreatedAfter(wait)
	}
	for range 3 {
		reject()
		recreatedAfter(maxLostBackoff)
	}
	// Seen running: the next loss waits the first recheck again.
	hold, _ := client.CoreV1().Pods("arc").Get(ctx, placeholderOf(runner, "1").Name, metav1.GetOptions{})
	hold.Status.Phase = v1.PodRunning
	p.Observed(hold)
	reject()
	recreatedAfter(time.Second)

	gone = true
	if err := p.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.deleting) + len(p.lost) + len(p.losses) + len(p.created) + len(p.creating) + len(p.yielding); n != 0 {
		t.Errorf("%d entries kept for a runner that is gone (deleting %v, lost %v, losses %v, created %d)", n, p.deleting, p.lost, p.losses, len(p.created))
	}
}

// Issue 23 (ChurnPodsMode at 0.47 of vanilla's throughput): Permit's
// hand-over went through the writes' client, so a workflow pod waited behind
// every placeholder create queued before it, 20 a second. Yield's get and
// delete go through their own client; here the writes' budget is spent
// (every request of it fails) and the hand-overs still go through.
func TestHandOverDoesNotWaitForTheWriteBudget(t *testing.T) {
	ctx := context.Background()
	shown := runnerPod("r1").Node("n1").Req(units("1")).Obj()
	queued := runnerPod("r2").Node("n1").Req(units("1")).Obj()
	hold := placeholderOf(shown, "1")
	handOver := fake.NewClientset(shown, queued, hold)
	writes := fake.NewClientset()
	writes.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewTooManyRequests("the writes' budget is spent", 1)
	})
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{Index: IndexFunc})
	if err := indexer.Add(hold); err != nil {
		t.Fatal(err)
	}
	p := New(writes, indexer, leadership.Leading(), func(*v1.Pod, string, string, string) {},
		func(podworker.RunnerKey) (*v1.Pod, *v1.Pod) { return nil, nil })
	p.HandOver = handOver

	// r1's placeholder is shown: Yield deletes it.
	p.StartYield(shown.UID)
	got, err := p.Yield(ctx, types.NamespacedName{Namespace: "arc", Name: "r1"}, shown.UID)
	if err != nil || got == nil || got.UID != hold.UID {
		t.Fatalf("yield of r1 = %v, %v; want its placeholder deleted", klog.KObj(got), err)
	}
	if _, err := handOver.CoreV1().Pods("arc").Get(ctx, hold.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("r1's placeholder still exists after yield: %v", err)
	}
	// r2 has no placeholder yet (its create waits in the worker's queue):
	// Yield asks the apiserver and finds none.
	p.StartYield(queued.UID)
	if got, err := p.Yield(ctx, types.NamespacedName{Namespace: "arc", Name: "r2"}, queued.UID); err != nil || got != nil {
		t.Errorf("yield of r2 = %v, %v; want no placeholder and no error", klog.KObj(got), err)
	}
	if n := len(writes.Actions()); n != 0 {
		t.Errorf("the hand-overs sent %d requests through the writes' client: %v", n, writes.Actions())
	}
}
