// Command tandem-sim runs an ARC scenario (test/scenarios/*.yaml) on a local
// etcd + kube-apiserver with each scheduler under test in turn, prints the
// comparison, and writes it as JSON and as an SVG picture.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/harness/clusterautoscaler"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/karpenter"
	"github.com/tandem-scheduler/tandem/harness/sim"
	"github.com/tandem-scheduler/tandem/harness/sim/report"
	"github.com/tandem-scheduler/tandem/harness/sim/scenario"
)

func main() {
	klog.InitFlags(nil)
	_ = flag.Set("logtostderr", "false")
	_ = flag.Set("stderrthreshold", "FATAL")
	scenarioFile := flag.String("scenario", "test/scenarios/seed.yaml", "scenario file")
	schedulers := flag.String("schedulers", "default,tandem", "schedulers under test, comma-separated: default, tandem, anti-affinity, tandem-pods, each optionally with /LeastAllocated or /MostAllocated in place of the scenario's scoring")
	inTreeVolumeBinding := flag.Bool("in-tree-volume-binding", false, "run the scheduler's in-tree VolumeBinding, which polls for the provisioner once per real second, instead of the simulator's, which watches")
	timeScale := flag.Float64("time-scale", 0, "simulated seconds per real second (0: the scenario's)")
	seed := flag.Int64("seed", 0, "job generator seed (0: the scenario's)")
	out := flag.String("out", "_output/demo", "directory for report.json and report.svg")
	timeout := flag.Duration("timeout", 30*time.Minute, "real-time limit per scheduler run")
	autoscaler := flag.String("autoscaler", "", "in a scenario with autoscale: Karpenter or ClusterAutoscaler in place of the scenario's (ClusterAutoscaler needs bin/cluster-autoscaler, hack/build-cluster-autoscaler.sh)")
	realNodes := flag.Bool("real-nodes", false, "run every node as a real kubelet with containerd on this machine (make kubelet; root): pods run as real containers and the kubelet admits them")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *scenarioFile, *schedulers, *out, *autoscaler, sim.Options{Seed: *seed, TimeScale: *timeScale, Timeout: *timeout, InTreeVolumeBinding: *inTreeVolumeBinding, RealNodes: *realNodes})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tandem-sim:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, file, schedulers, out, autoscaler string, opts sim.Options) error {
	sc, err := scenario.Load(file)
	if err != nil {
		return err
	}
	if autoscaler != "" {
		if sc.Autoscale == nil {
			return fmt.Errorf("--autoscaler %s: scenario %s has no autoscale section", autoscaler, file)
		}
		if autoscaler != scenario.Karpenter && autoscaler != scenario.ClusterAutoscaler {
			return fmt.Errorf("--autoscaler %q: want %s or %s", autoscaler, scenario.Karpenter, scenario.ClusterAutoscaler)
		}
		sc.Autoscale.Autoscaler = autoscaler
	}
	var under []sim.Scheduler
	for _, name := range strings.Split(schedulers, ",") {
		s, err := sim.ParseScheduler(name)
		if err != nil {
			return err
		}
		under = append(under, s)
	}
	started := time.Now()
	fmt.Printf("Scenario %s: %s\nStarting etcd and kube-apiserver on loopback ...\n", sc.Name, sc.Description)
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return err
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "tandem-sim: stopping the control plane:", err)
		}
	}()
	for _, s := range under {
		fmt.Printf("Running with scheduler %q ...\n", s)
	}
	if opts.RealNodes {
		opts.Kubeconfig = cp.KubeconfigPath()
		fmt.Println("Nodes are real kubelets with containerd on this machine; pods run as real containers")
	}
	if sc.Autoscale != nil {
		name, version, dir := "Karpenter", karpenter.Version, "karpenter"
		if sc.Autoscale.Kind() == scenario.ClusterAutoscaler {
			name, version, dir = "Cluster Autoscaler", clusterautoscaler.Version(""), "cluster-autoscaler"
			if _, err := clusterautoscaler.BinaryPath(""); err != nil {
				return err
			}
		}
		opts.Kubeconfig, opts.AutoscalerLogDir = cp.KubeconfigPath(), out+"/"+dir
		fmt.Printf("Autoscaling with %s %s (KWOK provider); its logs in %s/<scheduler>/\n", name, version, opts.AutoscalerLogDir)
	}
	rep, err := sim.Compare(ctx, cp.RESTConfig(), sc, under, opts)
	if err != nil {
		return err
	}
	nodes := fmt.Sprintf("%d nodes", rep.Nodes)
	if sc.Autoscale != nil {
		nodes = fmt.Sprintf("%d static nodes + %s's", rep.Nodes, sc.Autoscale.Kind())
	}
	fmt.Printf("\nSeed %d, time scale %gx, %s; times in simulated seconds.\n\n", rep.Seed, rep.TimeScale, nodes)
	report.PrintTable(os.Stdout, rep)
	jsonPath, svgPath := out+"/report.json", out+"/report.svg"
	if err := report.WriteJSON(jsonPath, rep); err != nil {
		return err
	}
	if err := report.WriteSVG(svgPath, rep); err != nil {
		return err
	}
	fmt.Printf("\nJSON:    %s\nPicture: %s\nTotal %s.\n", jsonPath, svgPath, time.Since(started).Round(time.Second))
	for _, r := range rep.Runs {
		if r.InvariantViolations > 0 || r.ReservationsLeft > 0 {
			return fmt.Errorf("%s: %d invariant violation(s), %d reservation(s) left: %v", r.Scheduler, r.InvariantViolations, r.ReservationsLeft, r.Violations)
		}
	}
	return nil
}
