package controllers

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
)

// The failures tandem exists to prevent, seen from the informer, so that an
// operator hears of them (metrics, alerts, a Warning on the pod) rather
// than finding a failed job: a workflow pod that a kubelet rejected, and a
// pinned workflow pod created while its placeholder still held its room
// (tandem-webhook did not release it: the kubelet may reject the pod).
// Counted by the leader only, so that the replicas' series add up.

// rejectedPrefix starts the message of a pod a kubelet rejected at
// admission (the kubelet's rejectPod).
const rejectedPrefix = "Pod was rejected: "

// rejectedByKubelet reports whether a kubelet rejected pod at admission.
func rejectedByKubelet(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodFailed && strings.HasPrefix(pod.Status.Message, rejectedPrefix)
}

// watchRejections watches failed pods labelled as runners' workflow and
// step pods (the runner-pod label, phase Failed) until ctx ends, for
// onRejected: the
// scheduler's pod informer lists no terminal pod (a pod that fails leaves it
// with a delete carrying its last state before the failure), so it cannot
// tell a rejection. Failed pods that exist when it starts are not counted
// again.
func (f *Feeder) watchRejections(ctx context.Context) {
	logger := klog.FromContext(ctx)
	cfg := f.cluster.KubeConfig()
	if cfg == nil {
		return // no apiserver: unit tests and benchmarks on fake clients
	}
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "Cannot watch failed workflow pods")
		return
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = f.runnerPodLabel
		o.FieldSelector = fields.OneTermEqualSelector("status.phase", string(v1.PodFailed)).String()
	}))
	informer := factory.Core().V1().Pods().Informer()
	_ = informer.SetTransform(func(obj any) (any, error) {
		if pod, ok := obj.(*v1.Pod); ok {
			pod.ManagedFields = nil
		}
		return obj, nil
	})
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if pod, ok := obj.(*v1.Pod); ok && !initial {
				f.onRejected(logger, pod)
			}
		},
	}); err != nil {
		logger.Error(err, "Registering the handler of failed workflow pods")
		return
	}
	factory.Start(ctx.Done())
}

// onRejected counts a workflow or step pod of a runner holding a
// reservation that a kubelet rejected, and tells its runner.
func (f *Feeder) onRejected(logger klog.Logger, pod *v1.Pod) {
	if !rejectedByKubelet(pod) || !f.leader.IsLeader() {
		return
	}
	runner, ok := f.runnerOf(pod)
	if !ok {
		return
	}
	// Only a pod of a runner that holds a reservation, of its incarnation
	// and on its node: the label is anyone's to write, in any namespace.
	// (A job in the runner's namespace can still make a pod that passes:
	// labelled with another runner's name, created after it, pinned to its
	// node; the admission policy's runner-label rule is what stops that.)
	if r, ok := f.store.Get(runner); !ok || r.Node != pod.Spec.NodeName || !r.Owns(pod) {
		return
	}
	metrics.WorkflowPodsRejected.WithLabelValues(metrics.RejectedReason(pod.Status.Reason)).Inc()
	logger.Info("A runner's workflow or step pod was rejected by the kubelet", "pod", klog.KObj(pod), "runner", runner, "node", pod.Spec.NodeName, "reason", pod.Status.Reason, "message", pod.Status.Message)
	if r, err := f.pods.Pods(runner.Namespace).Get(runner.Name); err == nil {
		// The rejected pod is the event's related object: an event per
		// pod, where the same reason on the runner would be one series.
		if rec := f.recorder(r); rec != nil {
			rec.Eventf(r, pod, v1.EventTypeWarning, contract.ReasonRejectedByKubelet, "Admit", "%s", Truncate(fmt.Sprintf(
				"The kubelet of node %s rejected pod %s: %s: %s", pod.Spec.NodeName, pod.Name, pod.Status.Reason, strings.TrimPrefix(pod.Status.Message, rejectedPrefix))))
		}
	}
}

// onPodAdd notes a runner's workflow pod created pinned to the node of its
// runner's reservation while the runner's placeholder is still there:
// tandem-webhook deletes the placeholder before such a pod is stored, and
// the informer delivers that delete before the pod, so the webhook did not
// (it is down, the apiserver cannot reach it, or it is not installed).
// The placeholder worker deletes the placeholder now (the fallback).
func (f *Feeder) onPodAdd(logger klog.Logger, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName == "" || contract.IsTerminal(pod) || contract.IsPlaceholder(pod) || f.placeholders == nil || !f.leader.IsLeader() {
		return
	}
	runner, ok := f.runnerOf(pod)
	if !ok {
		return
	}
	r, ok := f.store.Get(runner)
	if !ok || r.Node != pod.Spec.NodeName || !r.Owns(pod) {
		return
	}
	// One being deleted was released (by the webhook, with grace 0, its
	// delete comes at once).
	hold := f.placeholders.OnNode(runner, r.RunnerUID, pod.Spec.NodeName)
	if hold == nil || !f.firstWarning(pod.UID, contract.ReasonPlaceholderNotReleased) {
		return
	}
	metrics.PlaceholderPods.WithLabelValues(metrics.PlaceholderReleasedLate).Inc()
	logger.Info("Workflow pod was created pinned to its runner's node while the runner's placeholder held its room: tandem-webhook did not release it; deleting the placeholder now",
		"pod", klog.KObj(pod), "runner", runner, "placeholder", klog.KObj(hold), "node", pod.Spec.NodeName)
	f.warn(pod, contract.ReasonPlaceholderNotReleased, "Admit", fmt.Sprintf(
		"Created pinned to node %s while placeholder %s still held runner %s's room there: tandem-webhook did not release it (down, unreachable from the kube-apiserver, or not installed). tandem deletes the placeholder now; until then the kubelet may reject this pod",
		pod.Spec.NodeName, hold.Name, runner.Name))
}
