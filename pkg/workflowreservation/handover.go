package workflowreservation

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// The in-tree NodeResourcesFit's filter, run by this plugin (the shipped
// profiles disable the stock one at preFilter and filter): a node is
// filtered by one plugin where it would be by two, and in reservationMode
// Pods a workflow pod is filtered without its own placeholder.
//
// The handover of a placeholder to a workflow pod scheduled by tandem
// (reservationMode: Pods). The stock NodeResourcesFit counts the
// placeholder on the node like any pod, so a workflow pod that needs the
// placeholder's room would fail its Filter for as long as the placeholder
// exists, and deleting the placeholder first would free the room for every
// scheduler and the kubelet until the workflow pod is bound. So the Pods
// profile disables NodeResourcesFit at preFilter and filter and
// WorkflowReservation runs the same in-tree plugin itself, on a copy of the
// node without the pod's own placeholder. At Permit the workflow pod waits
// while its placeholder is deleted (its UID as precondition, grace 0), then
// is bound: the node's kubelet, which watches its pods in resourceVersion
// order, sees the room freed before the pod that takes it, and the room was
// free to anyone else only between those two API calls.

// fitPlugin is the in-tree NodeResourcesFit that WorkflowReservation runs in
// place of the stock one.
type fitPlugin interface {
	fwk.PreFilterPlugin
	fwk.FilterPlugin
	fwk.EnqueueExtensions
}

// newFit builds the in-tree NodeResourcesFit with its defaults (its score
// is not used: WorkflowReservation scores).
func newFit(ctx context.Context, h fwk.Handle) (fitPlugin, error) {
	args := &schedconfig.NodeResourcesFitArgs{ScoringStrategy: &schedconfig.ScoringStrategy{
		Type:      schedconfig.LeastAllocated,
		Resources: []schedconfig.ResourceSpec{{Name: string(v1.ResourceCPU), Weight: 1}, {Name: string(v1.ResourceMemory), Weight: 1}},
	}}
	p, err := noderesources.NewFit(ctx, args, h, feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, fmt.Errorf("NodeResourcesFit, which WorkflowReservation runs: %w", err)
	}
	return p.(fitPlugin), nil
}

// The profile's layout, read once the framework has built it (plugins are
// made before their profile's extension points are filled in), at the
// first PreFilter or when the scheduler asks for the events to register:
//
//   - runsFit: the profile does not enable NodeResourcesFit at filter, as
//     the shipped profiles do in both reservation modes, so this plugin
//     runs the in-tree Fit itself: one Filter plugin per node where there
//     would be two, and in Pods mode the Fit without a workflow pod's own
//     placeholder. With the stock Fit enabled (an older profile), Fit is
//     the stock one's, and PreFilter skips pods that no reservation can
//     affect.
//   - handoverAtPermit (reservationMode Pods): this plugin runs the Fit and
//     is enabled at permit, so a placeholder is handed over at Permit. With
//     the stock Fit enabled at filter, a workflow pod needing its
//     placeholder's room would never pass it, so the placeholder yields as
//     soon as a workflow pod pinned to its node exists.
//
// A handle that cannot list the profile's plugins (unit tests) gets the
// shipped layout of its mode: Pods runs the Fit and hands over at Permit;
// Memory leaves the Fit to the profile.
func (pl *WorkflowReservation) layout() {
	pl.layoutOnce.Do(func() {
		// The controllers' placeholder worker needs it too
		// (WantPlaceholder). The scheduler asks for the events while it is
		// built, before its informers start, so before any placeholder is
		// synced.
		defer func() { pl.room.SetHandover(pl.handoverAtPermit) }()
		pods := pl.mode == config.ReservationModePods
		var plugins *schedconfig.Plugins
		if lister, ok := pl.handle.(interface{ ListPlugins() *schedconfig.Plugins }); ok {
			plugins = lister.ListPlugins()
		}
		if plugins == nil {
			pl.runsFit, pl.handoverAtPermit = pods, pods
			return
		}
		pl.runsFit = !enabled(plugins.Filter, names.NodeResourcesFit)
		if pl.runsFit && enabled(plugins.PreFilter, names.NodeResourcesFit) {
			klog.Background().Info("Warning: NodeResourcesFit is enabled at preFilter but not at filter; WorkflowReservation runs it at both: disable it at preFilter too",
				"profile", pl.profile)
		}
		if !pods {
			return
		}
		pl.handoverAtPermit = pl.runsFit && enabled(plugins.Permit, Name)
		if !pl.runsFit {
			klog.Background().Error(nil, "reservationMode Pods: disable NodeResourcesFit at preFilter and filter in this profile (WorkflowReservation runs it); until then a placeholder yields as soon as a workflow pod pinned to its node exists, which frees its room to other schedulers until the pod is bound, and an unpinned workflow pod cannot use its room",
				"profile", pl.profile)
		} else if !pl.handoverAtPermit {
			klog.Background().Error(nil, "reservationMode Pods: enable WorkflowReservation at permit (multiPoint does); until then a placeholder yields as soon as a workflow pod pinned to its node exists",
				"profile", pl.profile)
		}
	})
}

// enabled reports whether set enables the plugin name.
func enabled(set schedconfig.PluginSet, name string) bool {
	for _, p := range set.Enabled {
		if p.Name == name {
			return true
		}
	}
	return false
}

// ownsFit reports whether this plugin runs the in-tree Fit (layout).
func (pl *WorkflowReservation) ownsFit() bool {
	pl.layout()
	return pl.runsFit
}

// handover says whether this profile hands placeholders over at Permit
// (layout).
func (pl *WorkflowReservation) handover() bool {
	pl.layout()
	return pl.handoverAtPermit
}

// handoverState is the in-tree Fit this plugin may run, and the profile's
// layout (computed once).
type handoverState struct {
	fit              fitPlugin
	layoutOnce       sync.Once
	runsFit          bool
	handoverAtPermit bool
}

// fitFilter runs the in-tree Fit for the pod on the node, less the pod's own
// placeholder for a workflow pod (reservationMode Pods).
func (pl *WorkflowReservation) fitFilter(ctx context.Context, cs fwk.CycleState, s *cycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if s.kind == kindWorkflow {
		// Every one of them: Permit's hand-over deletes them all.
		var without fwk.NodeInfo
		for _, pi := range nodeInfo.GetPods() {
			if p := pi.GetPod(); contract.IsPlaceholder(p) && p.Namespace == pod.Namespace && p.Annotations[contract.PlaceholderOfAnnotation] == s.runner.Name &&
				metav1.GetControllerOf(p).UID == s.own.RunnerUID {
				if without == nil {
					without = nodeInfo.Snapshot()
				}
				if err := without.RemovePod(klog.FromContext(ctx), p); err != nil {
					return fwk.AsStatus(err)
				}
			}
		}
		if without != nil {
			nodeInfo = without
		}
	}
	return pl.fit.Filter(ctx, cs, pod, nodeInfo)
}
