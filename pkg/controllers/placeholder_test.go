package controllers

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/tandem-scheduler/tandem/pkg/leadership"
)

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
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{PlaceholderIndex: IndexPlaceholder})
	want := placeholderOf(runner, "1")
	p := NewPlaceholders(client, indexer, leadership.Leading(), func(*v1.Pod, string, string, string) {},
		func(RunnerKey) (*v1.Pod, *v1.Pod) { return runner, want.DeepCopy() })
	key := RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}
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
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{PlaceholderIndex: IndexPlaceholder})
	if err := indexer.Add(going); err != nil {
		t.Fatal(err)
	}
	p := NewPlaceholders(client, indexer, leadership.Leading(), func(*v1.Pod, string, string, string) {},
		func(RunnerKey) (*v1.Pod, *v1.Pod) { return runner, placeholderOf(runner, "1") })
	p.Recheck = time.Hour
	key := RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}
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
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{PlaceholderIndex: IndexPlaceholder})
	p := NewPlaceholders(client, indexer, leadership.Leading(), func(*v1.Pod, string, string, string) {},
		func(RunnerKey) (*v1.Pod, *v1.Pod) { return runner, placeholderOf(runner, "1") })
	key := RunnerKey{Namespace: "arc", Name: "r1", UID: runner.UID}
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
