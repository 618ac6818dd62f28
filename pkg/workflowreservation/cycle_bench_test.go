//go:build !tandem_k8s_1_34 && !tandem_k8s_ge_1_36

package workflowreservation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedulercache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	_ "github.com/tandem-scheduler/tandem/pkg/apis/config/scheme"
	"github.com/tandem-scheduler/tandem/pkg/controllers/placeholder"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// The plugin's cost per scheduling cycle (issue 23, item 1): the real
// framework runs one pod's cycle as kube-scheduler does (PreFilter; Filter
// from a rotating start until it found as many feasible nodes as
// kube-scheduler's adaptive percentage asks for; PreScore and Score on them;
// Reserve on the best, then Unreserve so that every cycle sees the same
// state) from a snapshot of the same cluster, under vanilla kube-scheduler's
// default profile and one of tandem's: the shipped profile
// (manifests/scheduler-config.yaml: MostAllocated, reservationMode Memory),
// the same with LeastAllocated, and reservationMode Pods
// (manifests/kustomize/pods), with reservations held on runner pods bound
// across the nodes (the same pods in both snapshots; in Pods mode the held
// ones with their placeholders).
//
// Each benchmark runs vanilla's cycles and tandem's on the same snapshot,
// taking turns cycle by cycle, so that what the machine does meanwhile
// falls on both: ns/op, B/op and allocs/op are the tandem profile's per
// cycle, vanilla-ns/op and vanilla-allocs/op vanilla's, and tandem/vanilla
// the ratio of the two times, paired within the run. The "vanilla" cases
// measure vanilla's profile against itself: what the method makes of two
// identical profiles. A CPU profile tells the sides apart by the label
// side=vanilla, side=tandem (pprof -tagfocus). Run with
//
//	make bench-cycle       # -count 10; benchstat, and the ratios' intervals and verdicts
//
// make test runs each case once (-benchtime=1x). Built for the Kubernetes
// minor of go.mod only (the framework's runtime API differs between minors).

// cycleNamespace is the shipped profile's runnerNamespaces.
const cycleNamespace = "arc-runners"

// vanillaConfig is kube-scheduler's default profile, but for
// PodTopologySpread without default constraints, as tandem's profiles ship
// it (so that opportunistic batching stays on), so that the two sides
// differ by tandem only.
var vanillaConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
`

// cycleProfiles are the tandem profiles measured against vanilla's, and
// vanilla's against itself (the calibration: how far apart the method puts
// two identical profiles; run with nothing held, which it does not read).
var cycleProfiles = []cycleProfile{
	{name: "tandem", file: "manifests/scheduler-config.yaml"},
	{name: "tandem-least", file: "manifests/scheduler-config.yaml", scoring: config.LeastAllocated},
	{name: "tandem-pods", file: "manifests/kustomize/pods/scheduler-config.yaml", pods: true},
	// The shipped profile with kube-scheduler's 16 parallel workers, both
	// sides: Filter (the framework's parallelizer, stopped once enough
	// nodes fit, as findNodesThatPassFilters) and Score run in parallel.
	{name: "tandem-parallel", file: "manifests/scheduler-config.yaml", parallelism: 16},
	{name: calibration},
}

// cycleProfile is a profile measured against vanilla's.
type cycleProfile struct {
	name string
	// file is the KubeSchedulerConfiguration, from the repository's root.
	file string
	// scoring, if set, replaces the file's scoringStrategy type.
	scoring config.ScoringStrategyType
	// pods: reservationMode Pods, held reservations with placeholders.
	pods bool
	// parallelism is the framework's, both sides (default 1).
	parallelism int
}

// calibration names the case that measures vanilla's profile against
// itself.
const calibration = "vanilla"

func BenchmarkCycle(b *testing.B) {
	for _, nodes := range []int{500, 5000, 15000} {
		for _, held := range []int{0, 1000, 20000} {
			for _, profile := range cycleProfiles {
				if profile.name == calibration && held > 0 {
					continue
				}
				for _, kind := range []string{"PlainPod", "Runner"} {
					b.Run(fmt.Sprintf("%dNodes/%dHeld/%s/%s", nodes, held, kind, profile.name), func(b *testing.B) {
						env := cycleEnvFor(b, nodes, held, profile, kind)
						env.run(b)
					})
				}
			}
		}
	}
}

// cycleCluster is the cluster a case schedules into.
type cycleCluster struct {
	key      string
	nodes    []*v1.Node
	pods     []*v1.Pod
	objs     []runtime.Object
	snapshot *schedulercache.Snapshot
}

// cycleEnv is one case, set up: both frameworks on one cluster. The
// benchmark function runs once per round of b.N and once per -count; the
// last case's environment is kept, so that a case is set up once.
type cycleEnv struct {
	name    string
	cancel  context.CancelFunc
	ctx     context.Context
	cluster *cycleCluster
	vanilla *cycleSide
	tandem  *cycleSide
}

var (
	lastCluster *cycleCluster
	lastEnv     *cycleEnv
)

// newCycleCluster builds numNodes nodes and held runners, each bound with
// the reservation its Binding recorded (1 cpu, 2 GiB), spread over the
// nodes; half of them claimed by a workflow pod there, the others (in Pods
// mode) with their placeholder. 20,000 on 500 nodes leave 14 of 64 cpus
// free.
func newCycleCluster(b *testing.B, numNodes, held int, pods bool) *cycleCluster {
	key := fmt.Sprintf("%d/%d/%t", numNodes, held, pods)
	if lastCluster != nil && lastCluster.key == key {
		return lastCluster
	}
	c := &cycleCluster{key: key, nodes: make([]*v1.Node, numNodes)}
	for i := range c.nodes {
		c.nodes[i] = st.MakeNode().Name(fmt.Sprintf("n%d", i)).Label(v1.LabelHostname, fmt.Sprintf("n%d", i)).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "500"}).Obj()
		c.objs = append(c.objs, c.nodes[i])
	}
	size := contract.Amount{MilliCPU: 1000, Memory: 2 << 30, Pods: 1}
	for i := range held {
		name := fmt.Sprintf("h%d", i)
		node := c.nodes[i%numNodes].Name
		r := &reservations.Reservation{
			Runner: types.NamespacedName{Namespace: cycleNamespace, Name: name}, RunnerUID: types.UID(name), Node: node,
			Size: size, Source: contract.SourceAnnotation,
		}
		value, err := reservations.Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		runner := runnerPod(name).Namespace(cycleNamespace).SchedulerName("tandem-scheduler").Req(units("250m")).Node(node).Annotation(contract.ReservationAnnotation, value).Obj()
		runner.Status.Phase = v1.PodRunning
		add := func(p *v1.Pod) {
			p.Status.Phase = v1.PodRunning
			c.pods = append(c.pods, p)
			c.objs = append(c.objs, p)
		}
		add(runner)
		switch {
		case i%2 == 0:
			add(workflowPod(name).Namespace(cycleNamespace).Req(units("1")).Node(node).Obj())
		case pods:
			hold := placeholder.For(runner, node, size, "pause")
			hold.UID = types.UID(hold.Name)
			add(hold)
		}
	}
	c.snapshot = schedulercache.NewSnapshot(c.pods, c.nodes)
	lastCluster = c
	return c
}

func cycleEnvFor(b *testing.B, numNodes, held int, profile cycleProfile, kind string) *cycleEnv {
	if lastEnv != nil && lastEnv.name == b.Name() {
		return lastEnv
	}
	if lastEnv != nil {
		lastEnv.cancel()
		lastEnv = nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, logr.Discard()) // the plugin's warnings about the shipped args
	env := &cycleEnv{name: b.Name(), ctx: ctx, cancel: cancel, cluster: newCycleCluster(b, numNodes, held, profile.pods)}
	parallelism := max(profile.parallelism, 1)
	vanilla := filepath.Join(b.TempDir(), "vanilla.yaml")
	if err := os.WriteFile(vanilla, []byte(vanillaConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	env.vanilla = newCycleSide(ctx, b, env.cluster, vanilla, "", "", kind, parallelism)
	if profile.name == calibration {
		env.tandem = newCycleSide(ctx, b, env.cluster, vanilla, "", "", kind, parallelism)
		env.tandem.label = pprof.Labels("side", "calibration")
	} else {
		env.tandem = newCycleSide(ctx, b, env.cluster, filepath.Join("..", "..", profile.file), profile.name, profile.scoring, kind, parallelism)
		if got := len(env.tandem.pl.store.List()); got != held {
			b.Fatalf("%d reservations rebuilt from the runner pods, want %d", got, held)
		}
	}
	// A round over every node first: caches filled, the informers'
	// handlers done with the listed pods.
	for range len(env.vanilla.nodeInfos)/env.vanilla.need + 1 {
		env.vanilla.cycle(b)
		env.tandem.cycle(b)
	}
	lastEnv = env
	return env
}

// cycleSide is one profile's framework, with the pod it schedules.
type cycleSide struct {
	// parallel filters with the framework's parallelizer.
	parallel  bool
	label     pprof.LabelSet
	ctx       context.Context
	fw        framework.Framework
	pl        *WorkflowReservation
	pod       *v1.Pod
	nodeInfos []fwk.NodeInfo
	need      int
	feasible  []fwk.NodeInfo
	start     int
}

func newCycleSide(ctx context.Context, b *testing.B, c *cycleCluster, file, name string, scoring config.ScoringStrategyType, kind string, parallelism int) *cycleSide {
	cc, err := options.LoadConfigFromFile(klog.Background(), file)
	if err != nil {
		b.Fatal(err)
	}
	profile := cc.Profiles[0]
	for _, pc := range profile.PluginConfig {
		if args, ok := pc.Args.(*config.WorkflowReservationArgs); ok && scoring != "" {
			args.ScoringStrategy.Type = scoring
		}
	}
	// vanilla's plugins read the cluster from the snapshot; tandem's
	// handlers rebuild the reservations from the runner pods.
	client := fake.NewClientset()
	if name != "" {
		client = fake.NewClientset(c.objs...)
	}
	side := &cycleSide{ctx: ctx, label: pprof.Labels("side", "tandem"), parallel: parallelism > 1}
	if name == "" {
		side.label = pprof.Labels("side", "vanilla")
	}
	side.fw, side.pl = realFramework(ctx, b, &profile, client, c.snapshot, frameworkruntime.WithParallelism(parallelism))
	side.pod = st.MakePod().Namespace(cycleNamespace).Name("p").UID("p").SchedulerName(profile.SchedulerName).Req(units("500m")).Obj()
	if kind == "Runner" {
		side.pod = runnerPod("new").Namespace(cycleNamespace).SchedulerName(profile.SchedulerName).Annotation(contract.WorkflowRequestsAnnotation, "cpu=2,memory=4Gi").Req(units("500m")).Obj()
	}
	if side.nodeInfos, err = c.snapshot.NodeInfos().List(); err != nil {
		b.Fatal(err)
	}
	side.need = numFeasibleNodesToFind(len(side.nodeInfos))
	side.feasible = make([]fwk.NodeInfo, 0, side.need)
	return side
}

// cycle runs one scheduling cycle of the side's pod.
func (c *cycleSide) cycle(b *testing.B) {
	ctx, fw, pod := c.ctx, c.fw, c.pod
	c.feasible = c.feasible[:0]
	state := framework.NewCycleState()
	if _, status, _ := fw.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() {
		b.Fatalf("PreFilter: %v", status)
	}
	processed := 0
	if c.parallel {
		processed = c.filterInParallel(state)
	} else {
		for processed < len(c.nodeInfos) && len(c.feasible) < c.need {
			ni := c.nodeInfos[(c.start+processed)%len(c.nodeInfos)]
			processed++
			if fw.RunFilterPlugins(ctx, state, pod, ni).IsSuccess() {
				c.feasible = append(c.feasible, ni)
			}
		}
	}
	c.start = (c.start + processed) % len(c.nodeInfos)
	if len(c.feasible) == 0 {
		b.Fatal("no node fits")
	}
	if status := fw.RunPreScorePlugins(ctx, state, pod, c.feasible); !status.IsSuccess() {
		b.Fatalf("PreScore: %v", status)
	}
	scores, status := fw.RunScorePlugins(ctx, state, pod, c.feasible)
	if !status.IsSuccess() {
		b.Fatalf("Score: %v", status)
	}
	best := scores[0]
	for _, s := range scores[1:] {
		if s.TotalScore > best.TotalScore {
			best = s
		}
	}
	if status := fw.RunReservePluginsReserve(ctx, state, pod, best.Name); !status.IsSuccess() {
		b.Fatalf("Reserve: %v", status)
	}
	fw.RunReservePluginsUnreserve(ctx, state, pod, best.Name)
}

// filterInParallel filters the nodes as kube-scheduler's
// findNodesThatPassFilters does: the framework's parallelizer over every
// node from the rotating start, cancelled once enough fit. It returns how
// many nodes it looked at, about.
func (c *cycleSide) filterInParallel(state fwk.CycleState) int {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	n := len(c.nodeInfos)
	feasible := make([]fwk.NodeInfo, c.need)
	var found, processed atomic.Int32
	check := func(i int) {
		ni := c.nodeInfos[(c.start+i)%n]
		processed.Add(1)
		if !c.fw.RunFilterPlugins(ctx, state, c.pod, ni).IsSuccess() {
			return
		}
		if k := found.Add(1); k > int32(c.need) {
			cancel()
			found.Add(-1)
		} else {
			feasible[k-1] = ni
		}
	}
	c.fw.Parallelizer().Until(ctx, n, check, "Filter")
	c.feasible = append(c.feasible, feasible[:found.Load()]...)
	return int(processed.Load())
}

// cycleCost is what one side's cycles took.
type cycleCost struct {
	ns, allocs, bytes uint64
}

// measure runs one cycle of side and adds its time to cost.
func (c *cycleSide) measure(b *testing.B, cost *cycleCost) {
	start := time.Now()
	pprof.Do(c.ctx, c.label, func(context.Context) { c.cycle(b) })
	cost.ns += uint64(time.Since(start))
}

// run measures b.N cycles of each side, taking turns cycle by cycle and at
// going first, so that what runs meanwhile (the garbage collector, either
// side's informers and reconciler) falls on both alike. Allocations are
// counted over blocks of each side's cycles alone.
func (e *cycleEnv) run(b *testing.B) {
	var vanilla, tandem cycleCost
	b.ReportAllocs() // printed as tandem's, below
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			e.vanilla.measure(b, &vanilla)
			e.tandem.measure(b, &tandem)
		} else {
			e.tandem.measure(b, &tandem)
			e.vanilla.measure(b, &vanilla)
		}
	}
	b.StopTimer()
	// Allocations per cycle, over a block of each side: not timed.
	const allocCycles = 20
	for _, side := range []struct {
		c    *cycleSide
		cost *cycleCost
	}{{e.vanilla, &vanilla}, {e.tandem, &tandem}} {
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		for range allocCycles {
			side.c.cycle(b)
		}
		goruntime.ReadMemStats(&after)
		side.cost.allocs = (after.Mallocs - before.Mallocs) / allocCycles
		side.cost.bytes = (after.TotalAlloc - before.TotalAlloc) / allocCycles
	}
	per := func(v uint64) float64 { return float64(v) / float64(b.N) }
	b.ReportMetric(per(tandem.ns), "ns/op")
	b.ReportMetric(float64(tandem.bytes), "B/op")
	b.ReportMetric(float64(tandem.allocs), "allocs/op")
	b.ReportMetric(per(vanilla.ns), "vanilla-ns/op")
	b.ReportMetric(float64(vanilla.allocs), "vanilla-allocs/op")
	b.ReportMetric(float64(tandem.ns)/float64(vanilla.ns), "tandem/vanilla")
}

// numFeasibleNodesToFind is kube-scheduler's, with percentageOfNodesToScore
// unset (adaptive: 50% less 1% per 125 nodes, at least 5%, at least 100).
func numFeasibleNodesToFind(all int) int {
	if all < 100 {
		return all
	}
	percentage := max(50-all/125, 5)
	return max(all*percentage/100, 100)
}
