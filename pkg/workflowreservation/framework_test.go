//go:build !tandem_k8s_1_34 && !tandem_k8s_ge_1_36

package workflowreservation

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/tandem-scheduler/tandem/pkg/controllers"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// realFramework builds the real scheduler framework of profile (the in-tree
// registry plus this plugin, each profile its own feeder), over the cluster
// in client (whose informers it starts) and the snapshot lister, with opts,
// and returns it with the plugin, nil if the profile has none; the plugin's
// handlers have rebuilt the reservations of client's runner pods and its
// reconciler made its first pass.
func realFramework(ctx context.Context, tb testing.TB, profile *schedconfig.KubeSchedulerProfile, client *fake.Clientset,
	snapshot fwk.SharedLister, opts ...frameworkruntime.Option) (framework.Framework, *WorkflowReservation) {
	tb.Helper()
	factory := informers.NewSharedInformerFactory(client, 0)
	var pl *WorkflowReservation
	feeder := controllers.NewFeeder(nil)
	registry := plugins.NewInTreeRegistry()
	if err := registry.Merge(frameworkruntime.Registry{Name: func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := newPlugin(ctx, obj, h, feeder, &nodeIndexRef{})
		if err == nil {
			pl = p.(*WorkflowReservation)
			testFeeders.Store(pl, feeder)
			tb.Cleanup(func() { testFeeders.Delete(pl) })
		}
		return p, err
	}}); err != nil {
		tb.Fatal(err)
	}
	schedulermetrics.Register()
	recorder := events.NewFakeRecorder(0)
	recorder.Events = nil // a FakeRecorder without a channel drops events
	fw, err := frameworkruntime.NewFramework(ctx, registry, profile, append([]frameworkruntime.Option{
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithEventRecorder(recorder),
	}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	go feeder.Run(ctx)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if pl != nil {
		if !cache.WaitForCacheSync(ctx.Done(), feeder.Synced) {
			tb.Fatal("the plugin's handlers did not sync")
		}
		if feeder.Leader().IsLeader() {
			<-feeder.Reconciled() // its first pass, as in newTestPlugin
		}
	}
	return fw, pl
}
