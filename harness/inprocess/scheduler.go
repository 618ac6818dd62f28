// Package inprocess runs tandem's scheduler inside the calling process
// against a real apiserver: the same scheduler, plugin registry and config
// decoding as the tandem-scheduler binary, without its HTTPS endpoints.
package inprocess

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/profile"

	// Registers WorkflowReservationArgs with kube-scheduler's config scheme.
	_ "github.com/tandem-scheduler/tandem/pkg/apis/config/scheme"
	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
)

// Registry is an out-of-tree registry with the plugin for a harness that
// builds a new scheduler from the same registry again and again
// (scheduler_perf, one per workload): each instance has reservations of its
// own (workflowreservation.New), which is right for a scheduler with one
// tandem profile, and only for that. Start registers, as tandem-scheduler
// does, one NewFactory per scheduler, whose profiles share their
// reservations.
func Registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{workflowreservation.Name: workflowreservation.New}
}

// Option changes how Start builds the scheduler.
type Option func(*frameworkruntime.Registry)

// WithRegistry adds plugins to the out-of-tree registry (Registry), for a
// profile that enables them: the simulator's storage.VolumeBindingName.
func WithRegistry(more frameworkruntime.Registry) Option {
	return func(r *frameworkruntime.Registry) {
		for name, factory := range more {
			(*r)[name] = factory
		}
	}
}

// Scheduler is a running scheduler; Stop ends it.
type Scheduler struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Start decodes configYAML (a KubeSchedulerConfiguration, as given to
// tandem-scheduler --config) and runs that scheduler against cfg until Stop.
func Start(ctx context.Context, cfg *rest.Config, configYAML string, opts ...Option) (*Scheduler, error) {
	// One cluster, one set of reservations, whichever profile took them:
	// tandem-scheduler's registry (a factory per scheduler, always leading
	// here).
	feeder := controllers.NewFeeder(nil)
	registry := frameworkruntime.Registry{workflowreservation.Name: workflowreservation.NewFactory(feeder)}
	for _, opt := range opts {
		opt(&registry)
	}
	dir, err := os.MkdirTemp("", "tandem-scheduler-config-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(configYAML), 0o600); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	cc, err := options.LoadConfigFromFile(logger, file)
	if err != nil {
		return nil, fmt.Errorf("loading scheduler config: %w", err)
	}

	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	informerFactory := newInformerFactory(client)
	dynInformerFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, v1.NamespaceAll, nil)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	sched, err := scheduler.New(ctx, client, informerFactory, dynInformerFactory,
		profile.NewRecorderFactory(broadcaster),
		scheduler.WithKubeConfig(cfg),
		scheduler.WithProfiles(cc.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cc.PercentageOfNodesToScore),
		scheduler.WithFrameworkOutOfTreeRegistry(registry),
		scheduler.WithPodInitialBackoffSeconds(cc.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cc.PodMaxBackoffSeconds),
		scheduler.WithParallelism(cc.Parallelism),
	)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating scheduler: %w", err)
	}
	// As tandem-scheduler: the controllers the profiles joined, next to
	// the scheduler.
	go feeder.Run(ctx)
	broadcaster.StartRecordingToSink(ctx.Done())
	informerFactory.Start(ctx.Done())
	dynInformerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	dynInformerFactory.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("waiting for handlers: %w", err)
	}
	s := &Scheduler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sched.Run(ctx)
		broadcaster.Shutdown()
		informerFactory.Shutdown()
	}()
	return s, nil
}

// Stop ends the scheduler and waits until it has stopped.
func (s *Scheduler) Stop() {
	s.cancel()
	<-s.done
}
