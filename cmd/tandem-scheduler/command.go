package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/discovery"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
	"github.com/tandem-scheduler/tandem/pkg/skew"
	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
)

// newCommand is kube-scheduler's command (app.NewSchedulerCommand) with one
// step added between app.Setup and app.Run: the leader elector's lock is
// observed, so that the plugin knows when this replica leads. kube-scheduler
// runs plugin informer handlers on standby replicas too, and only the leader
// may emit events and export the reservation gauges.
func newCommand() *cobra.Command {
	opts := options.NewOptions()
	cmd := &cobra.Command{
		Use: "tandem-scheduler",
		Long: `tandem-scheduler is kube-scheduler with the WorkflowReservation plugin: an ARC
runner pod and its future workflow pod are placed as one group, and room for the
workflow pod is reserved on the runner's node. It takes kube-scheduler's flags and
configuration file.`,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			// Feature gates are set before RunE.
			return opts.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, opts)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if len(arg) > 0 {
					return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	fs := cmd.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	if err := cmd.MarkFlagFilename("config", "yaml", "yml", "json"); err != nil {
		klog.Background().Error(err, "Failed to mark flag filename")
	}
	return cmd
}

// run is kube-scheduler's runCommand with the lock observed.
func run(cmd *cobra.Command, opts *options.Options) error {
	verflag.PrintAndExitIfRequested()
	fg := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := logsapi.ValidateAndApply(opts.Logs, fg); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	cliflag.PrintFlags(cmd.Flags())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()

	// What runs: kube-scheduler with the plugin in every tandem profile,
	// and next to it tandem's controllers (pkg/controllers), which the
	// profiles join as app.Setup builds them. Both run on every replica;
	// only the leader schedules, and the controllers write and speak only
	// while it leads.
	leader := leadership.New()
	feeder := controllers.NewFeeder(leader)
	cc, sched, err := app.Setup(ctx, opts, app.WithPlugin(workflowreservation.Name, workflowreservation.NewFactory(feeder)))
	if err != nil {
		return err
	}
	go feeder.Run(ctx)
	checkSkew(klog.FromContext(ctx), cc.Client.Discovery())
	if cc.LeaderElection != nil {
		cc.LeaderElection.Lock = leader.Observe(cc.LeaderElection.Lock)
	} else {
		leader.Lead()
	}
	if mfg, ok := fg.(featuregate.MutableFeatureGate); ok {
		mfg.AddMetrics()
	}
	opts.ComponentGlobalsRegistry.AddMetrics()
	return app.Run(ctx, cc, sched)
}

// checkSkew logs an error if the apiserver is outside the version-skew
// policy of this build (pkg/skew); the scheduler runs anyway, as
// kube-scheduler would, but an unsupported pairing is never silent.
func checkSkew(logger klog.Logger, d discovery.ServerVersionInterface) {
	server, err := d.ServerVersion()
	if err != nil {
		logger.Error(err, "Cannot read kube-apiserver's version to check the version-skew policy")
		return
	}
	build := version.Get().GitVersion
	if err := skew.Check(build, server.GitVersion); err != nil {
		logger.Error(err, "Unsupported kube-apiserver version", "build", build, "apiserver", server.GitVersion)
		return
	}
	logger.Info("kube-apiserver is within this build's version-skew policy", "build", build, "apiserver", server.GitVersion)
}
