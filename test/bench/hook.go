package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/sim/arc"
)

// Labels of the benchmark's pods (templates/runner-hook.yaml).
const (
	// HookLabel on a runner pod asks the hook for a workflow pod once the
	// runner is bound; the value is the hook mode (arc.HookNodeName or
	// arc.HookKubeScheduler).
	HookLabel = "bench.tandem.dev/hook"
	// RoleLabel is RoleRunner or RoleWorkflow; the hook watches only pods
	// that carry it.
	RoleLabel = "bench.tandem.dev/role"
	// MeasuredLabel "true" marks the pods that go through the scheduler:
	// the ones a workload's SchedulingThroughput counts.
	MeasuredLabel = "bench.tandem.dev/measured"

	RoleRunner   = "runner"
	RoleWorkflow = "workflow"
)

// hookWorkers is how many workflow pods the hook creates or deletes at once.
const hookWorkers = 16

// action is one API call the hook makes: create the workflow pod of runner
// name, or delete pod name.
type action struct {
	create    bool
	namespace string
	name      string
}

// Hook stands in for ARC's container hook (hooks v0.7.0) next to
// scheduler_perf, which can create pods from templates but not a pod on the
// node the scheduler chose for another one. When a runner carrying HookLabel
// is bound, the hook creates its workflow pod as harness/sim/arc builds it for
// the mode (spec.nodeName, or a required hostname affinity), sized by the
// runner's tandem.dev/workflow-requests annotation. When either pod of a
// pair is deleted it deletes the other: the job ended, the pair finished.
//
// Unlike the real hook it mounts no work volume (an emptyDir stands in for
// the runner's PVC) and creates the workflow pod as soon as the runner is
// bound rather than when the runner takes a job.
type Hook struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	queue   workqueue.TypedRateLimitingInterface[action]
	wg      sync.WaitGroup
}

// StartHook starts a hook on client's pods; stop waits for it to end.
func StartHook(ctx context.Context, client kubernetes.Interface) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	h := &Hook{
		client: client,
		factory: informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = RoleLabel
		})),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[action]()),
	}
	informer := h.factory.Core().V1().Pods()
	h.pods = informer.Lister()
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.changed(nil, obj) },
		UpdateFunc: h.changed,
		DeleteFunc: h.deleted,
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("hook: pod event handler: %w", err)
	}
	h.factory.Start(ctx.Done())
	for typ, ok := range h.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			h.factory.Shutdown()
			return nil, fmt.Errorf("hook: informer for %v did not sync", typ)
		}
	}
	for range hookWorkers {
		h.wg.Go(func() {
			for h.work(ctx) {
			}
		})
	}
	return func() {
		cancel()
		h.queue.ShutDown()
		h.factory.Shutdown()
		h.wg.Wait()
	}, nil
}

// changed queues the workflow pod of a runner that got bound.
func (h *Hook) changed(oldObj, newObj any) {
	pod, ok := newObj.(*v1.Pod)
	if !ok || pod.Labels[RoleLabel] != RoleRunner || pod.Labels[HookLabel] == "" || pod.Spec.NodeName == "" {
		return
	}
	if old, ok := oldObj.(*v1.Pod); ok && old.Spec.NodeName != "" {
		return // bound before: its workflow pod is queued already
	}
	h.queue.Add(action{create: true, namespace: pod.Namespace, name: pod.Name})
}

// deleted queues the deletion of the other pod of the pair.
func (h *Hook) deleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	switch pod.Labels[RoleLabel] {
	case RoleRunner:
		if pod.Labels[HookLabel] != "" {
			h.queue.Add(action{namespace: pod.Namespace, name: arc.WorkflowPodName(pod.Name)})
		}
	case RoleWorkflow:
		runner := pod.Labels[arc.RunnerPodLabel]
		if _, err := h.pods.Pods(pod.Namespace).Get(runner); runner != "" && err == nil {
			h.queue.Add(action{namespace: pod.Namespace, name: runner})
		}
	}
}

// work runs one queued action, and retries it with backoff when the API
// call failed: a workflow pod never created would leave its workload's
// barrier waiting out its timeout. It returns false once the queue shuts
// down.
func (h *Hook) work(ctx context.Context) bool {
	a, shutdown := h.queue.Get()
	if shutdown {
		return false
	}
	defer h.queue.Done(a)
	if err := h.do(ctx, a); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Hook action failed; retrying", "pod", klog.KRef(a.namespace, a.name), "create", a.create)
		h.queue.AddRateLimited(a)
		return true
	}
	h.queue.Forget(a)
	return true
}

func (h *Hook) do(ctx context.Context, a action) error {
	if !a.create {
		err := h.client.CoreV1().Pods(a.namespace).Delete(ctx, a.name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the other pod of a pair: %w", err)
		}
		return nil
	}
	runner, err := h.pods.Pods(a.namespace).Get(a.name)
	if apierrors.IsNotFound(err) || (err == nil && runner.DeletionTimestamp != nil) {
		return nil // the pair finished before its workflow pod was created
	}
	if err != nil {
		return fmt.Errorf("getting the runner: %w", err)
	}
	pod, err := workflowPod(runner)
	if err != nil {
		// The runner's annotation is wrong: no retry mends it.
		klog.FromContext(ctx).Error(err, "Hook could not build a workflow pod", "runner", klog.KObj(runner))
		return nil
	}
	if _, err := h.client.CoreV1().Pods(a.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the workflow pod: %w", err)
	}
	// The runner may have gone while the pod was created, and the deletion
	// its going queued may have run first: no workflow pod outlives its runner.
	if _, err := h.pods.Pods(a.namespace).Get(a.name); apierrors.IsNotFound(err) {
		h.queue.Add(action{namespace: a.namespace, name: pod.Name})
	}
	return nil
}

// workflowPod is the workflow pod of a bound runner: harness/sim/arc's for the
// runner's hook mode, with the requests of its annotation on the job
// container and an emptyDir in place of the work PVC.
func workflowPod(runner *v1.Pod) (*v1.Pod, error) {
	mode := arc.HookMode(runner.Labels[HookLabel])
	if mode != arc.HookNodeName && mode != arc.HookKubeScheduler {
		return nil, fmt.Errorf("label %s=%q: want %s or %s", HookLabel, mode, arc.HookNodeName, arc.HookKubeScheduler)
	}
	requests, err := parseRequests(runner.Annotations[contract.WorkflowRequestsAnnotation])
	if err != nil {
		return nil, err
	}
	pod, err := arc.WorkflowPod(runner, mode, "", arc.JobSpec{})
	if err != nil {
		return nil, err
	}
	pod.Labels[RoleLabel] = RoleWorkflow
	if mode == arc.HookKubeScheduler {
		pod.Labels[MeasuredLabel] = "true"
	}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	pod.Spec.Containers[0].Resources.Requests = requests
	pod.Spec.Volumes = []v1.Volume{{Name: arc.WorkVolume, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	return pod, nil
}

// parseRequests reads "cpu=2,memory=4Gi".
func parseRequests(s string) (v1.ResourceList, error) {
	list := v1.ResourceList{}
	for item := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("workflow requests %q: want a list of name=quantity", s)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("workflow requests %q: %s: %w", s, name, err)
		}
		list[v1.ResourceName(name)] = q
	}
	return list, nil
}
