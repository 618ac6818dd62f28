package workflowreservation

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// Memory over time (issue 23, item 4): runner lifetimes pushed through the
// plugin as kube-scheduler and its informers would (PreFilter, Filter,
// Reserve; the bound runner with the reservation the Binding recorded; its
// workflow pod claiming; both deleted), the heap read after every
// lifetimesStep. Every map and cache of the plugin must come back to its base
// size: the heap may not grow with the number of runners that have come and
// gone. Run with
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
	ctx := context.Background()
	logger := klog.Background()
	nodes := make([]*v1.Node, 8)
	for i := range nodes {
		nodes[i] = st.MakeNode().Name(fmt.Sprintf("n%d", i)).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "500"}).Obj()
	}
	for range b.N {
		pl, h := newTestPlugin(&testing.T{}, defaultArgs(), false)
		h.recorder.Events = nil // a FakeRecorder without a channel drops events
		var first uint64
		for i := range lifetimes {
			node := nodes[i%len(nodes)]
			lifetime(ctx, b, logger, pl, fmt.Sprintf("r%d", i), node)
			if (i+1)%lifetimesStep != 0 {
				continue
			}
			heap := heapAlloc()
			if first == 0 {
				first = heap
			}
			b.Logf("after %6d lifetimes: heap %6.2f MB, %d reservations held", i+1, float64(heap)/(1<<20), len(pl.store.List()))
			b.ReportMetric(float64(heap)/(1<<20), fmt.Sprintf("MB@%dk", (i+1)/1000))
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
}

// lifetime is one runner's life: scheduled onto node, bound (the informer
// shows it with the reservation its Binding recorded), claimed by its
// workflow pod, then the workflow pod and the runner deleted.
func lifetime(ctx context.Context, b *testing.B, logger klog.Logger, pl *WorkflowReservation, name string, node *v1.Node) {
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
	pl.feeder.OnPod(logger, bound)
	wf := workflowPod(name).Node(node.Name).Req(units("1")).Obj()
	pl.feeder.OnPod(logger, wf)
	if r, _ := pl.store.Get(types.NamespacedName{Namespace: runner.Namespace, Name: name}); r.ClaimedBy() == "" {
		b.Fatalf("the workflow pod of %s claimed nothing", name)
	}
	pl.feeder.OnPodDelete(logger, wf)
	pl.feeder.OnPodDelete(logger, bound)
}

func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
