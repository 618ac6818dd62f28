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

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

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
// place of the stock one in reservationMode Pods.
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
		return nil, fmt.Errorf("reservationMode Pods runs NodeResourcesFit itself: %w", err)
	}
	return p.(fitPlugin), nil
}

// handover says whether this profile hands placeholders over at Permit: it
// runs the in-tree Fit itself and the stock one is not enabled at filter
// (were it, a workflow pod needing its placeholder's room would never pass
// it, and the placeholder must yield as soon as a workflow pod pinned to its
// node exists).
func (pl *WorkflowReservation) handover() bool {
	pl.handoverOnce.Do(func() {
		if pl.fit == nil {
			return
		}
		pl.handoverAtPermit = true
		lister, ok := pl.handle.(interface{ ListPlugins() *schedconfig.Plugins })
		if !ok {
			return
		}
		plugins := lister.ListPlugins()
		if plugins == nil {
			return
		}
		for _, p := range plugins.Filter.Enabled {
			if p.Name == names.NodeResourcesFit {
				pl.handoverAtPermit = false
				klog.Background().Error(nil, "reservationMode Pods: disable NodeResourcesFit at preFilter and filter in this profile (WorkflowReservation runs it); until then a placeholder yields as soon as a workflow pod pinned to its node exists, which frees its room to other schedulers until the pod is bound, and an unpinned workflow pod cannot use its room",
					"profile", pl.profile.Name)
			}
		}
		permit := false
		for _, p := range plugins.Permit.Enabled {
			permit = permit || p.Name == Name
		}
		if !permit {
			pl.handoverAtPermit = false
			klog.Background().Error(nil, "reservationMode Pods: enable WorkflowReservation at permit (multiPoint does); until then a placeholder yields as soon as a workflow pod pinned to its node exists",
				"profile", pl.profile.Name)
		}
	})
	return pl.handoverAtPermit
}

// mayHavePlaceholder says whether the workflow pod's runner may have a
// placeholder: its profile holds reservations with pods, or one exists.
func (pl *WorkflowReservation) mayHavePlaceholder(s *preFilterState) bool {
	if pl.feeder.Placeholders().Of(s.runner, s.own.RunnerUID) != nil {
		return true
	}
	if pl.feeder.Pods() == nil {
		return false
	}
	runner, err := pl.feeder.Pods().Pods(s.runner.Namespace).Get(s.runner.Name)
	if err != nil || runner.UID != s.own.RunnerUID {
		return false
	}
	owner := pl.feeder.ProfileOf(runner)
	return owner != nil && owner.ReservationMode == config.ReservationModePods
}

// handoverState is what a profile knows about its handover, computed once.
type handoverState struct {
	fit              fitPlugin
	handoverOnce     sync.Once
	handoverAtPermit bool
}

// fitFilter runs the in-tree Fit for the pod on the node, less the pod's own
// placeholder for a workflow pod.
func (pl *WorkflowReservation) fitFilter(ctx context.Context, cs fwk.CycleState, s *preFilterState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if s.kind == kindWorkflow {
		for _, pi := range nodeInfo.GetPods() {
			if p := pi.GetPod(); contract.IsPlaceholder(p) && p.Namespace == pod.Namespace && p.Annotations[contract.PlaceholderOfAnnotation] == s.runner.Name &&
				metav1.GetControllerOf(p).UID == s.own.RunnerUID {
				without := nodeInfo.Snapshot()
				if err := without.RemovePod(klog.FromContext(ctx), p); err != nil {
					return fwk.AsStatus(err)
				}
				nodeInfo = without
				break
			}
		}
	}
	return pl.fit.Filter(ctx, cs, pod, nodeInfo)
}
