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

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// The plugin's cost per call and per event at cluster scale: 20,000 runners
// holding reservations on 500 or 5,000 nodes. Run with
//
//	go test ./pkg/workflowreservation -run '^$' -bench . -benchmem
//
// make test runs each once (-benchtime=1x) so that none rots.

const benchRunners = 20000

// benchPlugin returns a plugin whose store holds benchRunners reservations
// spread over nodes, half of them claimed, and the node n0 with its pods.
func benchPlugin(b *testing.B, nodes int) (*WorkflowReservation, fwk.NodeInfo) {
	b.Helper()
	pl, h := newTestPlugin(b, defaultArgs(), false)
	h.recorder.Events = nil // a FakeRecorder without a channel drops events
	var onNode0 []*v1.Pod
	for i := range benchRunners {
		node := fmt.Sprintf("n%d", i%nodes)
		name := fmt.Sprintf("r%d", i)
		r := &reservations.Reservation{
			Runner: types.NamespacedName{Namespace: "arc", Name: name}, RunnerUID: types.UID(name), Node: node,
			Size: contract.Amount{MilliCPU: 2500, Memory: 5 << 30, Pods: 2}, Step: contract.Amount{MilliCPU: 500, Memory: 1 << 30, Pods: 1},
			Source: contract.SourceHookTemplate,
		}
		claimed := i%2 == 0
		if claimed {
			r = claimedBy(r, types.UID(name+"-workflow"))
		}
		pl.store.Rebuild(r)
		if node == "n0" {
			onNode0 = append(onNode0, runnerPod(name).Req(units("500m")).Node(node).Obj())
			if claimed {
				onNode0 = append(onNode0, workflowPod(name).Req(units("2")).Node(node).Obj())
			}
		}
	}
	node := st.MakeNode().Name("n0").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "500"}).Obj()
	return pl, nodeInfo(node, onNode0...)
}

func benchNodes(b *testing.B, run func(b *testing.B, nodes int)) {
	for _, nodes := range []int{500, 5000} {
		b.Run(fmt.Sprintf("%dNodes_%dRunners", nodes, benchRunners), func(b *testing.B) { run(b, nodes) })
	}
}

func BenchmarkFilter(b *testing.B) {
	ctx := klog.NewContext(context.Background(), klog.Background().V(10))
	for name, pod := range map[string]*v1.Pod{
		"Runner":   runnerPod("new").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2,memory=4Gi").Req(units("500m")).Obj(),
		"OtherPod": st.MakePod().Namespace("arc").Name("p").UID("p").Req(units("1")).Obj(),
	} {
		b.Run(name, func(b *testing.B) {
			benchNodes(b, func(b *testing.B, nodes int) {
				pl, ni := benchPlugin(b, nodes)
				cs := framework.NewCycleState()
				if _, status := pl.PreFilter(ctx, cs, pod, nil); !status.IsSuccess() {
					b.Fatal(status)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					pl.Filter(ctx, cs, pod, ni)
				}
			})
		})
	}
}

func BenchmarkScore(b *testing.B) {
	ctx := context.Background()
	pod := runnerPod("new").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2,memory=4Gi").Req(units("500m")).Obj()
	benchNodes(b, func(b *testing.B, nodes int) {
		pl, ni := benchPlugin(b, nodes)
		cs := framework.NewCycleState()
		pl.PreFilter(ctx, cs, pod, nil)
		pl.PreScore(ctx, cs, pod, nil)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			pl.Score(ctx, cs, pod, ni)
		}
	})
}

// BenchmarkHandlers is one event of each kind a busy cluster sends: a
// workflow pod claiming with nodeName, then going.
func BenchmarkHandlers(b *testing.B) {
	logger := klog.Background().V(10)
	benchNodes(b, func(b *testing.B, nodes int) {
		pl, _ := benchPlugin(b, nodes)
		wf := workflowPod("r1").Node("n1").Obj()
		base, _ := pl.store.Get(key("r1"))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			r := base // unclaimed, as before the workflow pod came
			pl.store.Take(&r)
			feederOf(pl).OnPod(logger, wf)
			feederOf(pl).OnPodDelete(logger, wf)
		}
	})
}

// BenchmarkStoreHeap reports the heap the store takes for benchRunners
// reservations (MB/op is the figure; the loop runs once per -benchtime).
func BenchmarkStoreHeap(b *testing.B) {
	benchNodes(b, func(b *testing.B, nodes int) {
		for range b.N {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			pl, _ := benchPlugin(b, nodes)
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MB")
			runtime.KeepAlive(pl)
		}
	})
}
