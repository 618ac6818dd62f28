//go:build !tandem_k8s_1_34 && !tandem_k8s_ge_1_36

package workflowreservation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedulercache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	_ "github.com/tandem-scheduler/tandem/pkg/apis/config/scheme"
	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// The plugin's cost per scheduling cycle (issue 23, item 1): the real
// framework runs one pod's cycle as kube-scheduler does (PreFilter; Filter
// from a rotating start until it found as many feasible nodes as
// kube-scheduler's adaptive percentage asks for; PreScore and Score on them;
// Reserve on the best, then Unreserve so that every cycle sees the same
// state) from a snapshot of the same cluster, under vanilla kube-scheduler's
// default profile and the shipped tandem profile
// (manifests/scheduler-config.yaml), with reservations held on runner pods
// bound across the nodes (the same pods in both snapshots). Run with
//
//	go test ./pkg/workflowreservation -run '^$' -bench '^BenchmarkCycle$' -benchmem -count 10 | tee cycle.txt
//
// and compare the two profiles' ns/op per size (benchstat, or the ratio of
// the medians). make test runs each case once (-benchtime=1x). Built for
// the Kubernetes minor of go.mod only (the framework's runtime API differs
// between minors).

// cycleNamespace is the shipped profile's runnerNamespaces.
const cycleNamespace = "arc-runners"

var vanillaConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
`

func BenchmarkCycle(b *testing.B) {
	for _, nodes := range []int{500, 5000, 15000} {
		for _, held := range []int{0, 1000, 20000} {
			for _, profile := range []string{"vanilla", "tandem"} {
				for _, kind := range []string{"PlainPod", "Runner"} {
					b.Run(fmt.Sprintf("%dNodes/%dHeld/%s/%s", nodes, held, kind, profile), func(b *testing.B) {
						benchCycle(b, nodes, held, profile, kind)
					})
				}
			}
		}
	}
}

func benchCycle(b *testing.B, numNodes, held int, profileName, kind string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, logr.Discard()) // the plugin's warnings about the shipped args

	nodes := make([]*v1.Node, numNodes)
	var objs []runtime.Object
	for i := range nodes {
		nodes[i] = st.MakeNode().Name(fmt.Sprintf("n%d", i)).Label(v1.LabelHostname, fmt.Sprintf("n%d", i)).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: "64", v1.ResourceMemory: "256Gi", v1.ResourcePods: "500"}).Obj()
		objs = append(objs, nodes[i])
	}
	// held runners, each bound with the reservation its Binding recorded
	// (1 cpu, 2 GiB), spread over the nodes; half of them claimed by a
	// workflow pod there. 20,000 on 500 nodes leave 14 of 64 cpus free.
	var pods []*v1.Pod
	for i := range held {
		name := fmt.Sprintf("h%d", i)
		node := nodes[i%numNodes].Name
		r := &reservations.Reservation{
			Runner: types.NamespacedName{Namespace: cycleNamespace, Name: name}, RunnerUID: types.UID(name), Node: node,
			Size: reservations.Amount{MilliCPU: 1000, Memory: 2 << 30, Pods: 1}, Source: contract.SourceAnnotation,
		}
		value, err := reservations.Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		runner := runnerPod(name).Namespace(cycleNamespace).SchedulerName("tandem-scheduler").Req(units("250m")).Node(node).Annotation(contract.ReservationAnnotation, value).Obj()
		runner.Status.Phase = v1.PodRunning
		pods = append(pods, runner)
		objs = append(objs, runner)
		if i%2 == 0 {
			wf := workflowPod(name).Namespace(cycleNamespace).Req(units("1")).Node(node).Obj()
			wf.Status.Phase = v1.PodRunning
			pods = append(pods, wf)
			objs = append(objs, wf)
		}
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	snapshot := schedulercache.NewSnapshot(pods, nodes)

	cfg := vanillaConfig
	file := filepath.Join("..", "..", "manifests", "scheduler-config.yaml")
	if profileName == "vanilla" {
		file = filepath.Join(b.TempDir(), "vanilla.yaml")
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cc, err := options.LoadConfigFromFile(klog.Background(), file)
	if err != nil {
		b.Fatal(err)
	}
	profile := cc.Profiles[0]
	feeder := controllers.NewFeeder(nil)
	var pl *WorkflowReservation
	registry := plugins.NewInTreeRegistry()
	if err := registry.Merge(frameworkruntime.Registry{Name: func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := newPlugin(ctx, obj, h, feeder)
		if err == nil {
			pl = p.(*WorkflowReservation)
		}
		return p, err
	}}); err != nil {
		b.Fatal(err)
	}
	schedulermetrics.Register()
	recorder := events.NewFakeRecorder(0)
	recorder.Events = nil
	fw, err := frameworkruntime.NewFramework(ctx, registry, &profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithEventRecorder(recorder),
		frameworkruntime.WithParallelism(1),
	)
	if err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if pl != nil {
		if !cache.WaitForCacheSync(ctx.Done(), pl.feeder.Synced) {
			b.Fatal("the plugin's handlers did not sync")
		}
		if pl.feeder.Leader().IsLeader() {
			<-pl.feeder.Reconciled() // its first pass, as in newTestPlugin
		}
		if got := len(pl.store.List()); got != held {
			b.Fatalf("%d reservations rebuilt from the runner pods, want %d", got, held)
		}
	}

	pod := st.MakePod().Namespace(cycleNamespace).Name("p").UID("p").SchedulerName(profile.SchedulerName).Req(units("500m")).Obj()
	if kind == "Runner" {
		pod = runnerPod("new").Namespace(cycleNamespace).SchedulerName(profile.SchedulerName).Annotation(contract.WorkflowRequestsAnnotation, "cpu=2,memory=4Gi").Req(units("500m")).Obj()
	}
	nodeInfos, err := snapshot.NodeInfos().List()
	if err != nil {
		b.Fatal(err)
	}
	need := numFeasibleNodesToFind(len(nodeInfos))
	feasible := make([]fwk.NodeInfo, 0, need)
	start := 0
	cycle := func() {
		feasible = feasible[:0]
		state := framework.NewCycleState()
		if _, status, _ := fw.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() {
			b.Fatalf("PreFilter: %v", status)
		}
		processed := 0
		for processed < len(nodeInfos) && len(feasible) < need {
			ni := nodeInfos[(start+processed)%len(nodeInfos)]
			processed++
			if fw.RunFilterPlugins(ctx, state, pod, ni).IsSuccess() {
				feasible = append(feasible, ni)
			}
		}
		start = (start + processed) % len(nodeInfos)
		if len(feasible) == 0 {
			b.Fatal("no node fits")
		}
		if status := fw.RunPreScorePlugins(ctx, state, pod, feasible); !status.IsSuccess() {
			b.Fatalf("PreScore: %v", status)
		}
		scores, status := fw.RunScorePlugins(ctx, state, pod, feasible)
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
	// A round over every node first: caches filled, the informers' handlers
	// done with the listed pods.
	for range len(nodeInfos)/need + 1 {
		cycle()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		cycle()
	}
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
