//go:build !tandem_k8s_1_34 && !tandem_k8s_ge_1_36

package workflowreservation

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedulercache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	_ "github.com/tandem-scheduler/tandem/pkg/apis/config/scheme"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// batchScheduler is the shipped profile on the real framework, over a real
// scheduler cache, driven as kube-scheduler's scheduleOne drives it with
// opportunistic batching on (schedulePod, findNodesThatFitPod,
// evaluateNominatedNode): PreFilter, the node hint of the framework's
// batch, the hinted node filtered, or a full cycle whose sorted scores the
// batch keeps; then the pod assumed and reserved.
type batchScheduler struct {
	t        *testing.T
	ctx      context.Context
	fw       framework.Framework
	pl       *WorkflowReservation
	cache    schedulercache.Cache
	snapshot *schedulercache.Snapshot
	cycle    int64
	// batching off: every pod gets a full cycle.
	off bool
}

func newBatchScheduler(t *testing.T, nodes []*v1.Node, pods []*v1.Pod) *batchScheduler {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	schedulermetrics.Register()
	b := &batchScheduler{t: t, ctx: klog.NewContext(ctx, klog.LoggerWithValues(logger)), cache: schedulercache.New(ctx, time.Hour, nil), snapshot: schedulercache.NewEmptySnapshot()}
	var objs []runtime.Object
	for _, n := range nodes {
		b.cache.AddNode(logger, n)
		objs = append(objs, n)
	}
	for _, p := range pods {
		if err := b.cache.AddPod(logger, p); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, p)
	}
	b.update()
	cc, err := options.LoadConfigFromFile(logger, filepath.Join("..", "..", "manifests", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b.fw, b.pl = realFramework(ctx, t, &cc.Profiles[0], fake.NewClientset(objs...), b.snapshot, frameworkruntime.WithPodNominator(noNominatedPods{}))
	return b
}

func (b *batchScheduler) update() {
	b.t.Helper()
	if err := b.cache.UpdateSnapshot(klog.FromContext(b.ctx), b.snapshot); err != nil {
		b.t.Fatal(err)
	}
}

// fullCycle filters every node and scores the feasible ones, as a cycle
// without a hint does.
func (b *batchScheduler) fullCycle(state fwk.CycleState, pod *v1.Pod) []fwk.NodePluginScores {
	b.t.Helper()
	nodes, err := b.snapshot.NodeInfos().List()
	if err != nil {
		b.t.Fatal(err)
	}
	var feasible []fwk.NodeInfo
	for _, ni := range nodes {
		if b.fw.RunFilterPluginsWithNominatedPods(b.ctx, state, pod, ni).IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	if len(feasible) == 0 {
		return nil
	}
	if status := b.fw.RunPreScorePlugins(b.ctx, state, pod, feasible); !status.IsSuccess() {
		b.t.Fatalf("PreScore: %v", status)
	}
	scores, status := b.fw.RunScorePlugins(b.ctx, state, pod, feasible)
	if !status.IsSuccess() {
		b.t.Fatalf("Score: %v", status)
	}
	return scores
}

// schedule places pod and reports where, and whether the batch's hint
// placed it; "" if it fits nowhere.
func (b *batchScheduler) schedule(pod *v1.Pod) (node string, hinted bool) {
	b.t.Helper()
	b.update()
	b.cycle++
	state := framework.NewCycleState()
	if _, status, _ := b.fw.RunPreFilterPlugins(b.ctx, state, pod); !status.IsSuccess() {
		b.t.Fatalf("PreFilter of %s: %v", pod.Name, status)
	}
	var hint string
	var signature fwk.PodSignature
	if !b.off {
		hint, signature = b.fw.GetNodeHint(b.ctx, pod, state, b.cycle)
	}
	if hint != "" {
		if ni, err := b.snapshot.Get(hint); err == nil && b.fw.RunFilterPluginsWithNominatedPods(b.ctx, state, pod, ni).IsSuccess() {
			node, hinted = hint, true
			b.fw.StoreScheduleResults(b.ctx, signature, hint, node, nil, b.cycle)
		}
	}
	if node == "" {
		scores := b.fullCycle(state, pod)
		if scores == nil {
			return "", false
		}
		sorted := &sortedScores{nodes: scores}
		heap.Init(&sorted.nodes)
		node = sorted.Pop()
		if !b.off {
			b.fw.StoreScheduleResults(b.ctx, signature, hint, node, sorted, b.cycle)
		}
	}
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = node
	if err := b.cache.AssumePod(klog.FromContext(b.ctx), assumed); err != nil {
		b.t.Fatal(err)
	}
	if status := b.fw.RunReservePluginsReserve(b.ctx, state, pod, node); !status.IsSuccess() {
		b.t.Fatalf("Reserve: %v", status)
	}
	return node, hinted
}

// noNominatedPods is a scheduling queue that nominated no pod.
type noNominatedPods struct{}

func (noNominatedPods) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {
}
func (noNominatedPods) DeleteNominatedPodIfExists(*v1.Pod)                   {}
func (noNominatedPods) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo) {}
func (noNominatedPods) NominatedPodsForNode(string) []fwk.PodInfo            { return nil }

// sortedScores is kube-scheduler's sortedNodeScores: a heap, best first.
type sortedScores struct{ nodes scoreHeap }

func (s *sortedScores) Pop() string { return heap.Pop(&s.nodes).(fwk.NodePluginScores).Name }
func (s *sortedScores) Len() int    { return s.nodes.Len() }

type scoreHeap []fwk.NodePluginScores

func (h scoreHeap) Len() int           { return len(h) }
func (h scoreHeap) Less(i, j int) bool { return h[i].TotalScore > h[j].TotalScore }
func (h scoreHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *scoreHeap) Push(x any)        { *h = append(*h, x.(fwk.NodePluginScores)) }
func (h *scoreHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// batchCluster is nodes of 3 to 6 cpu, each with some pods already, and
// reservations of 1 cpu held by bound runners on about a third of them.
func batchCluster(rng *rand.Rand) ([]*v1.Node, []*v1.Pod) {
	var nodes []*v1.Node
	var pods []*v1.Pod
	for i := range 40 {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, st.MakeNode().Name(name).Label(v1.LabelHostname, name).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: fmt.Sprint(3 + rng.IntN(4)), v1.ResourceMemory: "64Gi", v1.ResourcePods: "110"}).Obj())
		if rng.IntN(2) == 0 {
			pods = append(pods, st.MakePod().Namespace("other").Name(fmt.Sprintf("filler-%d", i)).UID(fmt.Sprintf("filler-%d", i)).
				Req(units(fmt.Sprintf("%dm", 100*rng.IntN(10)))).Node(name).Obj())
		}
		if rng.IntN(3) == 0 {
			runner := fmt.Sprintf("held-%d", i)
			r := &reservations.Reservation{Runner: types.NamespacedName{Namespace: cycleNamespace, Name: runner}, RunnerUID: types.UID(runner),
				Node: name, Size: contract.Amount{MilliCPU: 1000, Pods: 1}, Source: contract.SourceAnnotation}
			value, err := reservations.Encode(r)
			if err != nil {
				panic(err)
			}
			pod := runnerPod(runner).Namespace(cycleNamespace).SchedulerName("tandem-scheduler").Req(units("100m")).Node(name).
				Annotation(contract.ReservationAnnotation, value).Obj()
			pod.Status.Phase = v1.PodRunning
			pods = append(pods, pod)
		}
	}
	return nodes, pods
}

// Opportunistic batching with tandem's profile: streams of identical
// runners, then identical plain pods among the reservations, on clusters of
// random shapes. Every placement the batch's hint made is one a full cycle
// would also have chosen at that moment: the pod (with its workflow pod,
// for a runner) fits there beside everything the node runs and holds, by
// an account kept here apart from the plugin, and no node scores higher.
// And the batch did make placements: the signatures are on.
func TestBatchedPlacementsAreFullCyclePlacements(t *testing.T) {
	hinted := map[string]int{}
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes, pods := batchCluster(rng)
		b := newBatchScheduler(t, nodes, pods)
		streams := []struct {
			kind string
			pod  func(i int) *v1.Pod
			// need is the cpu the node must have free beside what it holds.
			need int64
		}{
			{"runner", func(i int) *v1.Pod {
				return runnerPod(fmt.Sprintf("r%d-%d", seed, i)).Namespace(cycleNamespace).SchedulerName("tandem-scheduler").
					Annotation(contract.WorkflowRequestsAnnotation, "cpu=2500m").Req(units("500m")).Obj()
			}, 3000},
			// Runners of two scale sets taking turns: their workflow pods
			// differ, and so do their signatures; no hint of one may place
			// the other.
			{"runner of two sizes", func(i int) *v1.Pod {
				workflow := []string{"cpu=2500m", "cpu=1500m"}[i%2]
				return runnerPod(fmt.Sprintf("s%d-%d", seed, i)).Namespace(cycleNamespace).SchedulerName("tandem-scheduler").
					Annotation(contract.WorkflowRequestsAnnotation, workflow).Req(units("500m")).Obj()
			}, 2000},
			{"plain pod", func(i int) *v1.Pod {
				name := fmt.Sprintf("p%d-%d", seed, i)
				return st.MakePod().Namespace("other").Name(name).UID(name).SchedulerName("tandem-scheduler").Req(units("2500m")).Obj()
			}, 2500},
		}
		for _, stream := range streams {
			for i := range 25 {
				pod := stream.pod(i)
				// The full cycle's best score, before the pod is placed.
				state := framework.NewCycleState()
				if _, status, _ := b.fw.RunPreFilterPlugins(b.ctx, state, pod); !status.IsSuccess() {
					t.Fatal(status)
				}
				b.update()
				best, scores := int64(-1), map[string]int64{}
				for _, s := range b.fullCycle(state, pod) {
					scores[s.Name] = s.TotalScore
					best = max(best, s.TotalScore)
				}
				free := b.freeBesideHeld()
				node, byHint := b.schedule(pod)
				if node == "" {
					if best >= 0 {
						t.Errorf("seed %d: %s %s placed nowhere, a full cycle would have placed it (best score %d)", seed, stream.kind, pod.Name, best)
					}
					continue
				}
				if free[node] < stream.need {
					t.Errorf("seed %d: %s %s placed on %s with %dm free beside the room held there, needs %dm (by the batch's hint: %t)",
						seed, stream.kind, pod.Name, node, free[node], stream.need, byHint)
				}
				if !byHint {
					continue
				}
				hinted[stream.kind]++
				if got, ok := scores[node]; !ok || got != best {
					t.Errorf("seed %d: the batch's hint placed %s %s on %s (score %d, feasible %t); a full cycle's best score was %d",
						seed, stream.kind, pod.Name, node, got, ok, best)
				}
			}
		}
	}
	for _, kind := range []string{"runner", "plain pod"} {
		if hinted[kind] == 0 {
			t.Errorf("no %s was placed by the batch's hint: batching is off for tandem's profile", kind)
		}
	}
	t.Logf("placed by the batch's hint: %v", hinted)
}

// freeBesideHeld is each node's free cpu less what its reservations hold,
// counted from the snapshot and the store apart from the plugin's Filter:
// in these clusters no reservation has a workflow pod yet, so each holds
// its size.
func (b *batchScheduler) freeBesideHeld() map[string]int64 {
	nodes, err := b.snapshot.NodeInfos().List()
	if err != nil {
		b.t.Fatal(err)
	}
	free := map[string]int64{}
	for _, ni := range nodes {
		name := ni.Node().Name
		held := b.pl.store.SumOn(name, func(*reservations.Reservation) bool { return true })
		free[name] = ni.GetAllocatable().GetMilliCPU() - ni.GetRequested().GetMilliCPU() - held.MilliCPU
	}
	return free
}

// The shipped profile signs pods (KEP-5598): the framework returns a
// signature for a runner and a plain pod of tandem's profile, none for a
// workflow pod that claims a runner's room.
func TestShippedProfileSignsPods(t *testing.T) {
	nodes, pods := batchCluster(rand.New(rand.NewPCG(1, 2)))
	b := newBatchScheduler(t, nodes, pods)
	signature := func(pod *v1.Pod) fwk.PodSignature {
		t.Helper()
		state := framework.NewCycleState()
		if _, status, _ := b.fw.RunPreFilterPlugins(b.ctx, state, pod); !status.IsSuccess() {
			t.Fatalf("PreFilter of %s: %v", pod.Name, status)
		}
		return b.fw.SignPod(b.ctx, pod, false)
	}
	runner := runnerPod("r").Namespace(cycleNamespace).SchedulerName("tandem-scheduler").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Req(units("500m")).Obj()
	if signature(runner) == nil {
		t.Error("a runner of tandem's profile is not signed: opportunistic batching is off for the profile")
	}
	plain := st.MakePod().Namespace("other").Name("p").UID("p").SchedulerName("tandem-scheduler").Req(units("1")).Obj()
	if signature(plain) == nil {
		t.Error("a plain pod of tandem's profile is not signed: opportunistic batching is off for the profile")
	}
	var held string
	for _, p := range pods {
		if p.Namespace == cycleNamespace {
			held = p.Name
			break
		}
	}
	wf := workflowPod(held).Namespace(cycleNamespace).SchedulerName("tandem-scheduler").Req(units("500m")).Obj()
	if sig := signature(wf); sig != nil {
		t.Errorf("the workflow pod of %s, which may use its room, is signed: %s", held, sig)
	}
}
