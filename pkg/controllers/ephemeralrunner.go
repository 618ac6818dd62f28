package controllers

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
)

// A job without a container (ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER=false and
// no `container:`) runs inside the runner and creates no workflow pod: its
// reservation would hold room for nothing until the runner ends. ARC writes
// the job a runner took into its EphemeralRunner's status (the listener's
// HandleJobStarted); the EphemeralRunner has the runner pod's name. A
// reservation whose runner started a job and whose workflow pod has not come
// within noWorkflowPodGrace is released. Without the CRD (or RBAC to read
// it) reservations are held until their runner ends, and the log says so.

// watchJobs runs an informer on EphemeralRunners once the API serves them,
// looking again every reconcile interval until it does (every
// arcRetry while the lookup fails). Runners wait for the informer's first
// list (Ownership).
func (f *Feeder) watchJobs(ctx context.Context) {
	logger := klog.FromContext(ctx)
	cfg := f.cluster.KubeConfig()
	if cfg == nil {
		return // Join knew: no ARC
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "Cannot watch EphemeralRunners")
		f.arcKnown(logger, arcAbsent)
		return
	}
	for !f.ephemeralRunnersServed(logger) {
		interval := f.reconcileEvery
		if f.arc.Load() == arcUnknown {
			interval = arcRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
	// Served: runners wait for the first list, also if they did not before.
	f.arc.Store(arcUnknown)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	informer := factory.ForResource(contract.EphemeralRunnerResource)
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.onEphemeralRunner(logger, obj, true) },
		UpdateFunc: func(_, obj any) { f.onEphemeralRunner(logger, obj, false) },
	}); err != nil {
		logger.Error(err, "Registering the EphemeralRunner handler")
		return
	}
	factory.Start(ctx.Done())
	logger.V(2).Info("Listing EphemeralRunners: runners wait until they are listed (tandem needs list and watch on them)", "resource", contract.EphemeralRunnerResource.String())
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return
	}
	f.setEphemeralRunners(informer.Lister())
	f.arcKnown(logger, arcListed)
	logger.V(2).Info("Watching EphemeralRunners: a pod is a runner only if its EphemeralRunner controls it, and reservations of jobs without a container are released after the grace", "grace", f.noWorkflowPodGrace)
}

// arcRetry is how soon a failed lookup of ARC's API is tried again.
const arcRetry = 2 * time.Second

// ephemeralRunnersServed reports whether the API serves EphemeralRunners;
// when it surely does not, it records so.
func (f *Feeder) ephemeralRunnersServed(logger klog.Logger) bool {
	list, err := f.cluster.ClientSet().Discovery().ServerResourcesForGroupVersion(contract.EphemeralRunnerResource.GroupVersion().String())
	switch {
	case err == nil:
		for _, r := range list.APIResources {
			if r.Name == contract.EphemeralRunnerResource.Resource {
				return true
			}
		}
		f.arcKnown(logger, arcAbsent)
	case apierrors.IsNotFound(err):
		f.arcKnown(logger, arcAbsent)
	default:
		logger.V(2).Info("Looking up ARC's EphemeralRunner resource failed; trying again", "err", err)
	}
	return false
}

// onEphemeralRunner requeues the runner a new EphemeralRunner controls
// (added), and starts the grace of a reservation whose runner took a job
// that is not the one (if any) the EphemeralRunner showed when the
// reservation was taken.
func (f *Feeder) onEphemeralRunner(logger klog.Logger, obj any, added bool) {
	er, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if added {
		f.activateOwned(logger, er.GetNamespace(), er.GetName())
	}
	job := contract.EphemeralRunnerJob(er)
	if job == "" {
		return
	}
	key := types.NamespacedName{Namespace: er.GetNamespace(), Name: er.GetName()}
	uid := f.store.JobStarted(key, job, time.Now())
	if uid == "" {
		return
	}
	logger.V(4).Info("Runner started a job; waiting for its workflow pod", "runner", key, "job", job, "grace", f.noWorkflowPodGrace)
	time.AfterFunc(f.noWorkflowPodGrace, func() { f.ReleaseWithoutWorkflowPod(logger, key, uid) })
}

// ReleaseWithoutWorkflowPod gives back the workflow room of a reservation
// whose job started and whose workflow pod did not come: a job without a
// container. A workflow pod that exists but waits to be scheduled still
// claims it. The step headroom stays held until the runner ends: such a job
// may still run container steps (hooks v0.7.0 pin them to the node).
func (f *Feeder) ReleaseWithoutWorkflowPod(logger klog.Logger, key types.NamespacedName, uid types.UID) {
	if r, ok := f.store.Get(key); ok {
		for _, wf := range f.WorkflowPods(key) {
			if !contract.IsTerminal(wf) && r.Owns(wf) && contract.MayClaimOn(wf, r.Node) {
				logger.V(4).Info("Runner's workflow pod exists; keeping its reservation past the grace", "runner", key, "pod", klog.KObj(wf))
				return
			}
		}
	}
	r, released := f.store.ReleaseWorkflowRoom(key, uid)
	if !released {
		return
	}
	f.recordMetrics()
	f.countRelease(metrics.ReleaseNoWorkflowPod, false)
	logger.V(2).Info("Released the reservation of a job without a workflow pod", "runner", key, "node", r.Node, "grace", f.noWorkflowPodGrace)
	f.routineEvent(stub(r), contract.ReasonReleased, "Release", func() string {
		note := fmt.Sprintf("Released %s on node %s: the runner's job started %s ago and no workflow pod came (a job without a container)", r.Size.Sub(r.Step), r.Node, f.noWorkflowPodGrace)
		if !r.Step.IsZero() {
			note += fmt.Sprintf("; %s stays held for container-step pods", r.Step)
		}
		return note
	})
	f.activateAllWaiting(logger)
}

// staleJobOf returns the job the runner's EphemeralRunner shows now, if the
// EphemeralRunners are watched: taken before the reservation, it is not
// the reservation's.
func (f *Feeder) staleJobOf(runner types.NamespacedName) string {
	lister := f.ephemeralRunnerLister()
	if lister == nil {
		return ""
	}
	obj, err := lister.ByNamespace(runner.Namespace).Get(runner.Name)
	if err != nil {
		return ""
	}
	if er, ok := obj.(*unstructured.Unstructured); ok {
		return contract.EphemeralRunnerJob(er)
	}
	return ""
}
