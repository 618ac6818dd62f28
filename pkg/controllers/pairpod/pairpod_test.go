package pairpod

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/controllers/podworker"
	"github.com/tandem-scheduler/tandem/pkg/internal/tandemtest"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// Extended resources cannot be requested without an equal limit: the
// apiserver would refuse a pair pod for a GPU runner.
func TestPairPodLimitsEqualRequests(t *testing.T) {
	runner := tandemtest.RunnerPod("gpu").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", "nvidia.com/gpu": "1"}).Obj()
	pair := For(runner, reservations.PodAmount(runner), contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}), nil, "pause:3.10")
	res := pair.Spec.Containers[0].Resources
	if len(res.Requests) == 0 {
		t.Fatal("pair pod requests nothing")
	}
	for name, q := range res.Requests {
		if l, ok := res.Limits[name]; !ok || l.Cmp(q) != 0 {
			t.Errorf("pair pod %s: limit %v, request %s; want equal", name, res.Limits[name], q.String())
		}
	}
	if q := res.Requests["nvidia.com/gpu"]; q.Value() != 1 {
		t.Errorf("pair pod requests nvidia.com/gpu %s, want 1", q.String())
	}
}

// Issue 37: with the pair pod's name taken, the worker created its pod under
// a generated name, and a sync before the informer showed that pod created
// another (converging later at the cost of a create and a delete per
// runner). What a create returned now counts as there until the informer
// shows it.
func TestPodCreatedUnderAGeneratedNameIsNotCreatedTwice(t *testing.T) {
	ctx := t.Context()
	runner := tandemtest.RunnerPod("r1").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	want := For(runner, reservations.PodAmount(runner), contract.AmountFromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}), nil, "pause:3.10")
	squatter := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: runner.Namespace, Name: want.Name}}
	client := fake.NewClientset(runner, squatter)
	generated := 0
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod := a.(clienttesting.CreateAction).GetObject().(*v1.Pod)
		if pod.Name == "" && pod.GenerateName != "" {
			generated++
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, generated)
		}
		return false, nil, nil // the tracker stores it
	})
	// The informer's view: the runner, waiting; neither the squatter nor
	// what the worker creates (not shown yet).
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{Index: IndexFunc})
	if err := indexer.Add(runner); err != nil {
		t.Fatal(err)
	}
	p := New(client, corelisters.NewPodLister(indexer), indexer, leadership.Leading(), func(*v1.Pod, string, string, string) {})
	p.Ask(runner, want)
	key := podworker.RunnerKey{Namespace: runner.Namespace, Name: runner.Name, UID: runner.UID}
	for range 3 {
		if err := p.sync(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if generated != 1 {
		t.Errorf("%d pair pods created under a generated name, want 1", generated)
	}
}
