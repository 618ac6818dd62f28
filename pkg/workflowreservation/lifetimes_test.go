package workflowreservation

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// Memory over time (issue 23, item 4): runner lifetimes pushed through the
// plugin as kube-scheduler and its informers would (PreFilter, Filter,
// Reserve; the bound runner with the reservation the Binding recorded; its
// workflow pod claiming; both deleted), the heap read after every
// lifetimesStep. Every map and cache of the plugin must come back to its base
// size: the heap may not grow with the number of runners that have come and
// gone. Memory: the handlers are called directly. Pods (reservationMode
// Pods): through the fake clientset and real informers, each runner's
// placeholder created by the plugin's worker and deleted when the workflow
// pod comes. Run with
//
//	go test ./pkg/workflowreservation -run '^$' -bench RunnerLifetimes -benchtime=1x -v
//
// make test runs it once (-benchtime=1x).

const (
	lifetimes     = 100000
	lifetimesStep = 10000
	// lifetimesGrowth bounds what the heap may grow between the first
	// step and the last (90,000 lifetimes): 40 bytes a lifetime; a map
	// entry kept per runner, UID or name costs more.
	lifetimesGrowth = 90000 * 40
)

func BenchmarkRunnerLifetimes(b *testing.B) {
	nodes := make([]*v1.Node, 8)
	for i := range nodes {
		nodes[i] = st.MakeNode().Name(fmt.Sprintf("n%d", i)).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "500"}).Obj()
	}
	b.Run("Memory", func(b *testing.B) {
		ctx := context.Background()
		logger := klog.Background()
		for range b.N {
			pl, h := newTestPlugin(b, defaultArgs(), false)
			h.recorder.Events = nil // a FakeRecorder without a channel drops events
			runLifetimes(b, pl, nil, func(name string, node *v1.Node) {
				lifetime(ctx, b, logger, pl, name, node)
			}, nodes)
		}
	})
	b.Run("Pods", func(b *testing.B) {
		ctx := context.Background()
		for range b.N {
			var objs []k8sruntime.Object
			for _, n := range nodes {
				objs = append(objs, n)
			}
			// Without managed fields: the field-managed tracker of
			// fake.NewClientset builds a REST mapper on every create, most of
			// this benchmark's time.
			client := fake.NewSimpleClientset(objs...)
			pl, h := newTestPluginOn(b, client, podsModeArgs(), nil, "", true)
			h.recorder.Events = nil
			w, err := h.client.CoreV1().Pods("arc").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			runLifetimes(b, pl, h, func(name string, node *v1.Node) {
				podsModeLifetime(ctx, b, pl, h, w, name, node)
			}, nodes)
			w.Stop()
		}
	})
}

// runLifetimes runs lifetimes of one runner each, round robin over nodes,
// and reads the heap after every lifetimesStep, once the plugin is done
// with them (h, if not nil: its informers).
func runLifetimes(b *testing.B, pl *WorkflowReservation, h *fakeHandle, one func(name string, node *v1.Node), nodes []*v1.Node) {
	var first uint64
	for i := range lifetimes {
		one(fmt.Sprintf("r%d", i), nodes[i%len(nodes)])
		if (i+1)%lifetimesStep != 0 {
			continue
		}
		if h != nil {
			settled(b, pl, h)
		}
		heap := heapAlloc()
		if first == 0 {
			first = heap
		}
		b.Logf("after %6d lifetimes: heap %6.2f MB, %d reservations held", i+1, float64(heap)/(1<<20), len(pl.store.List()))
		b.ReportMetric(float64(heap)/(1<<20), fmt.Sprintf("MB@%dk", (i+1)/1000))
	}
	if h != nil {
		settled(b, pl, h)
	}
	if n := len(pl.store.List()); n != 0 {
		b.Fatalf("%d reservations left after every runner went, want none", n)
	}
	if last := heapAlloc(); last > first+lifetimesGrowth {
		b.Fatalf("heap grew from %.2f MB after %d lifetimes to %.2f MB after %d: more than %d bytes, something keeps state per runner",
			float64(first)/(1<<20), lifetimesStep, float64(last)/(1<<20), lifetimes, lifetimesGrowth)
	}
	runtime.KeepAlive(pl)
}

// settled waits until the plugin's informers have delivered every delete:
// no reservation and no pod left.
func settled(b *testing.B, pl *WorkflowReservation, h *fakeHandle) {
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := h.informers.Core().V1().Pods().Lister().List(labels.Everything())
		return err == nil && len(pods) == 0 && len(pl.store.List()) == 0, err
	})
	if err != nil {
		b.Fatalf("reservations or pods left after their runners went: %v (%d reservations)", err, len(pl.store.List()))
	}
	h.client.ClearActions() // the fake clientset records every request
}

// podsModeLifetime is lifetime in reservationMode Pods, through the API:
// the bound runner created, its placeholder created by the plugin, the
// workflow pod created bound (as tandem-webhook lets it), the placeholder
// deleted by the plugin, then the workflow pod and the runner deleted.
func podsModeLifetime(ctx context.Context, b *testing.B, pl *WorkflowReservation, h *fakeHandle, w watch.Interface, name string, node *v1.Node) {
	bound := reserved(ctx, b, pl, name, node)
	pods := h.client.CoreV1().Pods(bound.Namespace)
	if _, err := pods.Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	hold := contract.PlaceholderName(name)
	awaitEvent(b, w, watch.Added, hold)
	wf := workflowPod(name).Node(node.Name).Req(units("1")).Obj()
	if _, err := pods.Create(ctx, wf, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	awaitEvent(b, w, watch.Deleted, hold)
	for _, p := range []*v1.Pod{wf, bound} {
		if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// awaitEvent reads w until it shows event of pod name.
func awaitEvent(b *testing.B, w watch.Interface, event watch.EventType, name string) {
	timeout := time.After(time.Minute)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("watch closed waiting for %s %s", event, name)
			}
			if p, isPod := e.Object.(*v1.Pod); isPod && e.Type == event && p.Name == name {
				return
			}
		case <-timeout:
			b.Fatalf("no %s event for pod %s within a minute", event, name)
		}
	}
}

// lifetime is one runner's life: scheduled onto node, bound (the informer
// shows it with the reservation its Binding recorded), claimed by its
// workflow pod, then the workflow pod and the runner deleted.
func lifetime(ctx context.Context, b *testing.B, logger klog.Logger, pl *WorkflowReservation, name string, node *v1.Node) {
	bound := reserved(ctx, b, pl, name, node)
	feederOf(pl).OnPod(logger, bound)
	wf := workflowPod(name).Node(node.Name).Req(units("1")).Obj()
	feederOf(pl).OnPod(logger, wf)
	if r, _ := pl.store.Get(types.NamespacedName{Namespace: bound.Namespace, Name: name}); r.ClaimedBy() == "" {
		b.Fatalf("the workflow pod of %s claimed nothing", name)
	}
	feederOf(pl).OnPodDelete(logger, wf)
	feederOf(pl).OnPodDelete(logger, bound)
}

// reserved runs runner name's scheduling cycle onto node (PreFilter,
// Filter, Reserve) and returns it bound, with the reservation its Binding
// recorded.
func reserved(ctx context.Context, b *testing.B, pl *WorkflowReservation, name string, node *v1.Node) *v1.Pod {
	runner := runnerPod(name).Annotation(contract.WorkflowRequestsAnnotation, "cpu=1,memory=1Gi").Req(units("250m")).Obj()
	cs := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, cs, runner, nil); !status.IsSuccess() {
		b.Fatalf("PreFilter %s: %v", name, status)
	}
	if status := pl.Filter(ctx, cs, runner, nodeInfo(node)); !status.IsSuccess() {
		b.Fatalf("Filter %s: %v", name, status)
	}
	if status := pl.Reserve(ctx, cs, runner, node.Name); !status.IsSuccess() {
		b.Fatalf("Reserve %s: %v", name, status)
	}
	r, ok := pl.store.Get(types.NamespacedName{Namespace: runner.Namespace, Name: name})
	if !ok {
		b.Fatalf("no reservation for %s after Reserve", name)
	}
	value, err := reservations.Encode(&r)
	if err != nil {
		b.Fatal(err)
	}
	bound := runner.DeepCopy()
	bound.Spec.NodeName = node.Name
	bound.Annotations[contract.ReservationAnnotation] = value
	bound.Status.Phase = v1.PodRunning
	return bound
}

func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
