package sim

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/tandem-scheduler/tandem/harness/inprocess"
	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/report"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
	"github.com/tandem-scheduler/tandem/harness/sim/storage"
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
	// Kubeconfig is the control plane's kubeconfig file: the autoscaler, a
	// process of its own, needs it in a scenario with autoscale.
	Kubeconfig string
	// InTreeVolumeBinding runs the scheduler's in-tree VolumeBinding, which
	// polls for the provisioner once per real second (timeScale simulated
	// seconds per runner start), instead of storage.VolumeBindingName.
	InTreeVolumeBinding bool
	// RealNodes runs every node of the scenario as a real kubelet with its
	// own containerd on this machine (harness/realnode; needs root, make kubelet
	// and Kubeconfig) in place of Node objects and the kubelet emulator:
	// pods run as real containers and the kubelet admits them itself. A
	// pool's capacity cpu and memory become the node's allocatable, so they
	// must fit the machine. Not with autoscale nor hook mode novolume.
	RealNodes bool
	// AutoscalerLogDir receives the autoscaler's log of each run, in a
	// directory named after the scheduler under test (default: a new
	// temporary directory).
	AutoscalerLogDir string
}

// Run runs the scenario once with the scheduler s, in-process, on the
// control plane behind cfg. It creates and removes its own nodes, namespace
// and scheduler.
func Run(ctx context.Context, cfg *rest.Config, sc *scenario.Scenario, s Scheduler, opts Options) (report.Run, error) {
	k := s.Kind
	if opts.Timeout == 0 {
		opts.Timeout = 15 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	h, err := NewHarness(ctx, cfg, sc, k, opts)
	if err != nil {
		return report.Run{}, err
	}
	defer h.Close()
	h.Label = s.String()
	scoring := sc.Scoring
	if s.Scoring != "" {
		scoring = s.Scoring
	}
	volumeBinding := storage.VolumeBindingName
	if opts.InTreeVolumeBinding {
		volumeBinding = ""
	}
	sched, err := inprocess.Start(ctx, cfg, SchedulerConfig(k, scoring, h.NoWorkflowPodGrace, volumeBinding, h.TandemArgs()...), inprocess.WithRegistry(storage.Registry()))
	if err != nil {
		return report.Run{}, err
	}
	defer sched.Stop()
	results, err := h.Emulate(ctx)
	if err != nil {
		return report.Run{}, fmt.Errorf("%s: %w", s, err)
	}
	if err := h.ScaleDown(ctx); err != nil {
		return report.Run{}, fmt.Errorf("%s: %w", s, err)
	}
	return h.Report(ctx, results)
}

// arcJobs converts the scenario's stream.
func arcJobs(stream []scenario.Arrival) []arc.Job {
	jobs := make([]arc.Job, 0, len(stream))
	for _, a := range stream {
		jobs = append(jobs, arc.Job{ID: a.ID, ScaleSet: a.ScaleSet, Arrival: a.At, Duration: a.Duration, Container: a.Container, Spec: a.Spec, Steps: a.Steps})
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
