// Command tandem-demo starts a local control plane and runs the seed
// scenarios of ARC kubernetes mode, once with plain kube-scheduler and once
// with tandem, and prints where every pod landed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/test/controlplane"
	"github.com/tandem-scheduler/tandem/test/demo"
)

func main() {
	klog.InitFlags(nil)
	_ = flag.Set("logtostderr", "false")
	_ = flag.Set("stderrthreshold", "FATAL")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "tandem-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	fmt.Println("Starting etcd and kube-apiserver on loopback ...")
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return err
	}
	defer cp.Stop()

	failed := map[demo.Scheduler]int{}
	for _, c := range demo.Cases {
		var runs []demo.Result
		for _, s := range []demo.Scheduler{demo.Plain, demo.Tandem} {
			r, err := demo.Run(ctx, cp.RESTConfig(), c, s)
			if err != nil {
				return fmt.Errorf("case %s with %s: %w", c.Name, s, err)
			}
			failed[s] += r.Rejected()
			runs = append(runs, r)
		}
		demo.Print(os.Stdout, c, runs)
	}
	fmt.Printf("Jobs failed for capacity: %s %d, %s %d.\n", demo.Plain, failed[demo.Plain], demo.Tandem, failed[demo.Tandem])
	return nil
}
