package sim

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/pkg/inprocess"
	"github.com/tandem-scheduler/tandem/pkg/sim/arc"
	"github.com/tandem-scheduler/tandem/pkg/sim/clock"
	"github.com/tandem-scheduler/tandem/pkg/sim/invariant"
	"github.com/tandem-scheduler/tandem/pkg/sim/kubelet"
	"github.com/tandem-scheduler/tandem/pkg/sim/report"
	"github.com/tandem-scheduler/tandem/pkg/sim/scenario"
	"github.com/tandem-scheduler/tandem/pkg/sim/storage"
)

// StorageClassName is the WaitForFirstConsumer class of the runners' work volumes.
const StorageClassName = "sim-local"

// Options tune a run.
type Options struct {
	// Seed replaces the scenario's generator seed when not zero.
	Seed int64
	// TimeScale replaces the scenario's when positive.
	TimeScale float64
	// Timeout bounds the run in real time (default 15m).
	Timeout time.Duration
}

// Run runs the scenario once with the scheduler k on the control plane
// behind cfg. It creates and removes its own nodes, namespace and scheduler.
func Run(ctx context.Context, cfg *rest.Config, sc *scenario.Scenario, k Kind, opts Options) (report.Run, error) {
	logger := klog.FromContext(ctx).WithValues("scheduler", k)
	ctx = klog.NewContext(ctx, logger)
	started := time.Now()
	if opts.Timeout == 0 {
		opts.Timeout = 15 * time.Minute
	}
	scale := sc.TimeScale
	if opts.TimeScale > 0 {
		scale = opts.TimeScale
	}
	seed := opts.Seed
	if seed == 0 && sc.Jobs.Generate != nil {
		seed = sc.Jobs.Generate.Seed
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return report.Run{}, err
	}
	r := rand.New(rand.NewSource(seed))
	// Namespaces outlive a run (no namespace controller deletes them): a
	// new one per run, whatever the scenario and seed.
	ns := namespaceName(sc.Name, k)
	env := &environment{client: client, ns: ns}
	defer env.cleanup(logger)
	if err := env.setUp(ctx, sc); err != nil {
		return report.Run{}, err
	}
	sets, timing, err := scaleSets(sc, k, ns, r)
	if err != nil {
		return report.Run{}, err
	}
	for _, s := range sets {
		if cm := s.ConfigMap(); cm != nil {
			if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return report.Run{}, fmt.Errorf("creating hook template ConfigMap: %w", err)
			}
		}
	}

	runCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	clk := clock.New(scale)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	kl := kubelet.New(client)
	checker := invariant.New(clk, env.allocatable, arc.RunnerPodLabel)
	for _, start := range []func(context.Context, informers.SharedInformerFactory) error{
		kl.Start, storage.New(client, StorageClassName).Start, checker.Start,
	} {
		if err := start(runCtx, factory); err != nil {
			return report.Run{}, err
		}
	}
	podLister := factory.Core().V1().Pods().Lister()
	factory.Start(runCtx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.WaitForCacheSync(runCtx.Done())

	sched, err := inprocess.Start(runCtx, cfg, SchedulerConfig(k, sc.Scoring))
	if err != nil {
		return report.Run{}, err
	}
	defer sched.Stop()

	jobs := arcJobs(sc.Stream(seed))
	clk.Reset() // simulated time starts with the job stream
	em := arc.NewEmulator(client, podLister, clk, kl, seed, sets, timing, jobs)
	results, err := em.Run(runCtx)
	if err != nil {
		return report.Run{}, fmt.Errorf("%s: %w", k, err)
	}
	samples := checker.Samples()
	blocked, err := probe(runCtx, client, ns, k.SchedulerName(), env.allocatable)
	if err != nil {
		return report.Run{}, err
	}
	run := report.NewRun(string(k), results, samples, env.allocatable)
	for _, v := range checker.Violations() {
		run.Violations = append(run.Violations, fmt.Sprintf("t=%.0fs node %s: %s", v.T.Seconds(), v.Node, v.Message))
	}
	run.InvariantViolations = len(run.Violations)
	run.ReservationsLeft = len(checker.Reservations()) + len(blocked)
	run.WallSeconds = float64(time.Since(started).Round(100*time.Millisecond)) / float64(time.Second)
	if len(blocked) > 0 {
		logger.Error(nil, "Room still held after every runner finished", "nodes", blocked)
	}
	return run, nil
}

// arcJobs converts the scenario's stream.
func arcJobs(stream []scenario.Arrival) []arc.Job {
	jobs := make([]arc.Job, 0, len(stream))
	for _, a := range stream {
		jobs = append(jobs, arc.Job{ID: a.ID, ScaleSet: a.ScaleSet, Arrival: a.At, Duration: a.Duration, Container: a.Container, Spec: a.Spec})
	}
	return jobs
}

// scaleSets builds the ARC scale sets of the scenario as configured for k.
func scaleSets(sc *scenario.Scenario, k Kind, ns string, r *rand.Rand) ([]*arc.ScaleSet, []arc.SetTiming, error) {
	var sets []*arc.ScaleSet
	var timing []arc.SetTiming
	for i := range sc.ScaleSets {
		s := &sc.ScaleSets[i]
		set := &arc.ScaleSet{
			Name: s.Name, Namespace: ns, Suffix: arc.Suffix(r),
			MinRunners: s.MinRunners, MaxRunners: s.MaxRunners, HookMode: s.HookMode,
			Runner: s.Runner, Labels: s.Labels, Annotations: s.Annotations,
			NodeSelector: s.NodeSelector, Tolerations: s.Tolerations, PriorityClassName: s.PriorityClassName,
			HookTemplate: s.HookTemplate, PrepareJobTimeout: s.PrepareJobTimeout.Duration,
			RequireJobContainer: s.RequireJobContainer == nil || *s.RequireJobContainer,
			StorageClass:        StorageClassName, WorkSize: s.WorkSize,
		}
		if err := configure(k, set); err != nil {
			return nil, nil, err
		}
		sets = append(sets, set)
		timing = append(timing, arc.SetTiming{RunnerStartup: s.Startup(), HookDelay: s.Delay()})
	}
	return sets, timing, nil
}

// namespaceName is a new namespace name for a run of scenario with k.
func namespaceName(scenario string, k Kind) string {
	prefix := fmt.Sprintf("sim-%s-%s", scenario, k)
	if len(prefix) > 50 {
		prefix = prefix[:50]
	}
	return strings.TrimSuffix(prefix, "-") + "-" + arc.Suffix(rand.New(rand.NewSource(time.Now().UnixNano())))
}
