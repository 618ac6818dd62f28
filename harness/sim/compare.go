package sim

import (
	"context"
	"fmt"
	"math/rand"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
	"github.com/tandem-scheduler/tandem/harness/sim/report"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

// Compare runs the scenario with each scheduler in turn, on the same job
// stream, and returns the report with the ideal packing bound.
func Compare(ctx context.Context, cfg *rest.Config, sc *scenario.Scenario, schedulers []Scheduler, opts Options) (*report.Report, error) {
	seed := opts.Seed
	if seed == 0 && sc.Jobs.Generate != nil {
		seed = sc.Jobs.Generate.Seed
	}
	scale := sc.TimeScale
	if opts.TimeScale > 0 {
		scale = opts.TimeScale
	}
	ideal, err := idealBound(sc, seed)
	if err != nil {
		return nil, err
	}
	rep := &report.Report{Scenario: sc.Name, Seed: seed, TimeScale: scale, Nodes: sc.TotalNodes(), Ideal: ideal}
	for _, s := range schedulers {
		run, err := Run(ctx, cfg, sc, s, opts)
		if err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, run)
	}
	rep.SetRatios()
	return rep, nil
}

// idealBound computes the bound from each job's runner + workflow pod
// requests (the workflow pod built by the hook from the set's template).
func idealBound(sc *scenario.Scenario, seed int64) (report.Ideal, error) {
	sets, _, err := scaleSets(sc, Default, "ideal", rand.New(rand.NewSource(seed)))
	if err != nil {
		return report.Ideal{}, err
	}
	pairs, runners := map[string]v1.ResourceList{}, map[string]v1.ResourceList{}
	for _, s := range sets {
		runner := s.RunnerPod("runner")
		runner.Spec.NodeName = "node"
		wf, err := arc.WorkflowPod(runner, s.HookMode, s.HookTemplate, arc.JobSpec{})
		if err != nil {
			return report.Ideal{}, fmt.Errorf("scale set %s: %w", s.Name, err)
		}
		runners[s.Name] = resourcehelper.PodRequests(runner, resourcehelper.PodResourcesOptions{})
		pair := runners[s.Name].DeepCopy()
		for name, q := range resourcehelper.PodRequests(wf, resourcehelper.PodResourcesOptions{}) {
			sum := pair[name]
			sum.Add(q)
			pair[name] = sum
		}
		pairs[s.Name] = pair
	}
	pair := func(j arc.Job) v1.ResourceList {
		if !j.Container {
			return runners[j.ScaleSet]
		}
		return pairs[j.ScaleSet]
	}
	total := v1.ResourceList{}
	if a := sc.Autoscale; a != nil {
		// The cluster grows: only Karpenter's cpu limit bounds it, with
		// the memory its instance family has per cpu.
		if a.CPULimit == 0 {
			return report.IdealBound(arcJobs(sc.Stream(seed)), pair, total), nil
		}
		total[v1.ResourceCPU] = *resource.NewQuantity(int64(a.CPULimit), resource.DecimalSI)
		total[v1.ResourceMemory] = *resource.NewQuantity(int64(a.CPULimit)*a.MemoryPerCPU(), resource.BinarySI)
	}
	for _, pool := range sc.Nodes {
		for name, q := range pool.Capacity {
			for range pool.Count {
				sum := total[name]
				sum.Add(q)
				total[name] = sum
			}
		}
	}
	return report.IdealBound(arcJobs(sc.Stream(seed)), pair, total), nil
}
