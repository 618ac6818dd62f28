package arc

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// MaxRunnerFailures is how many failed pods the EphemeralRunner controller
// replaces: once status.failures has more entries, it marks the
// EphemeralRunner failed instead of creating its pod again.
const MaxRunnerFailures = 5

// Job failure reasons caused by the runner rather than its workflow pod.
const (
	// ReasonRunnerFailed: the runner container exited non-zero (or its pod
	// was evicted) while the runner held the job.
	ReasonRunnerFailed = "RunnerFailed"
	// ReasonNodeDeleted: the runner's node went away with the job on it.
	ReasonNodeDeleted = "NodeDeleted"
	// ReasonRunnerPodDeleted: the runner pod was deleted by someone else
	// than ARC (e.g. the pod garbage collector) while it held the job.
	ReasonRunnerPodDeleted = "RunnerPodDeleted"
)

// RunnerFailure reports whether ARC's EphemeralRunner controller treats the
// runner pod as failed (it deletes the pod, counts a failure, and creates it
// again under the same name): the runner container terminated (a pod that
// ARC did not end itself), the pod was evicted, or the kubelet rejected it
// with an OutOf* reason (chart 0.13.1, #4336). A pod marked Failed whose
// container is still running otherwise (the pod garbage collector's mark
// before it deletes the pod of a vanished node) is left alone until it is
// gone, then created again. reason is the pod's reason or "Error".
func RunnerFailure(pod *v1.Pod) (failed bool, reason, message string) {
	if pod.Status.Phase != v1.PodFailed {
		return false, "", ""
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == RunnerContainer && cs.State.Terminated != nil {
			t := cs.State.Terminated
			return true, ReasonRunnerFailed, fmt.Sprintf("runner container exited with code %d (%s)", t.ExitCode, t.Reason)
		}
	}
	if pod.Status.Reason == "Evicted" || strings.HasPrefix(pod.Status.Reason, "OutOf") {
		return true, pod.Status.Reason, pod.Status.Message
	}
	return false, "", ""
}

// reconcileRunners is the EphemeralRunner controller and the runner: it
// follows each runner pod (started, registered, its job), creates it (again),
// deletes it when the runner finished, and handles its failure or loss.
func (e *Emulator) reconcileRunners(ctx context.Context, s *setState, now time.Duration) {
	logger := klog.FromContext(ctx)
	for _, r := range s.runners {
		if r.uid == "" {
			e.createPod(ctx, s, r)
			continue
		}
		pod, _ := e.pods.Pods(s.set.Namespace).Get(r.name)
		if pod != nil && pod.UID != r.uid {
			pod = nil // the previous incarnation, still going
		}
		if pod != nil {
			r.seen = true
		}
		switch {
		case pod == nil && r.seen:
			if r.state == runnerExiting {
				delete(s.runners, r.name)
				e.finalize(ctx, s, r)
				continue
			}
			// Not deleted by ARC: the pod garbage collector's work after the
			// node went. The controller finds no pod and creates it again.
			logger.V(2).Info("Runner pod disappeared; creating it again", "pod", klog.KRef(s.set.Namespace, r.name))
			if r.job != nil {
				e.record(ctx, r, nil, now, false, ReasonRunnerPodDeleted, "runner pod deleted")
				r.job = nil
			}
			e.recreate(r, now)
		case pod == nil:
		case r.state == runnerExiting:
			if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
				delete(s.runners, r.name)
				e.finalize(ctx, s, r)
			}
		case r.lost:
			// The node is gone; nothing runs until the pod is deleted.
		case pod.Status.Phase == v1.PodFailed:
			failed, reason, message := RunnerFailure(pod)
			if !failed {
				continue
			}
			e.runnerFailed(ctx, s, r, pod, now, reason, message)
		case r.crashed:
			// Its process exited; the cache does not show the pod failed yet.
		case r.state == runnerCreated && pod.Status.Phase == v1.PodRunning:
			r.state, r.since = runnerStarting, now
		case r.state == runnerStarting && now-r.since >= s.timing.RunnerStartup:
			r.state, r.since = runnerIdle, now
		case r.state == runnerBusy:
			e.advance(ctx, s, r, pod, now)
		}
	}
}

// createPod creates the runner's pod under the runner's name. When the
// create fails it is tried again on the next round; AlreadyExists means an
// earlier try went through (the pod is adopted) or the previous incarnation
// is still going (wait for it).
func (e *Emulator) createPod(ctx context.Context, s *setState, r *runner) {
	if !e.ensureEphemeralRunner(ctx, s, r) {
		return
	}
	pod := s.set.RunnerPod(r.name)
	if r.erUID != "" {
		pod.OwnerReferences[0].UID = r.erUID
	}
	pods := e.client.CoreV1().Pods(s.set.Namespace)
	created, err := e.create(ctx, s.set.Namespace, pod)
	if apierrors.IsAlreadyExists(err) {
		created, err = pods.Get(ctx, r.name, metav1.GetOptions{})
		if err == nil && (created.UID == r.previous || created.DeletionTimestamp != nil) {
			return
		}
	}
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Creating runner pod failed; retrying", "pod", klog.KRef(s.set.Namespace, r.name), "err", err)
		return
	}
	r.uid = created.UID
}

// runnerFailed is deletePodAsFailed: the job the runner held fails, the pod
// is deleted and the failure counted; the pod is created again under the
// same name, or after more than MaxRunnerFailures the EphemeralRunner is
// marked failed and goes (the set replaces it). The hook's workflow pod of
// the failed runner is not deleted: it keeps running until the next
// incarnation's prepare_job prunes it or the EphemeralRunner is finalized.
func (e *Emulator) runnerFailed(ctx context.Context, s *setState, r *runner, pod *v1.Pod, now time.Duration, reason, message string) {
	logger := klog.FromContext(ctx)
	r.failures++
	logger.V(2).Info("Runner pod failed", "pod", klog.KObj(pod), "reason", reason, "failures", r.failures, "busy", r.job != nil)
	if r.job != nil {
		e.record(ctx, r, pod, now, false, reason, message)
		r.job = nil
	}
	e.deletePod(ctx, s.set.Namespace, r.name, r.uid)
	if r.failures > MaxRunnerFailures {
		logger.Info("EphemeralRunner failed more than the limit; marking it failed", "runner", klog.KObj(pod), "failures", r.failures)
		delete(s.runners, r.name)
		e.finalize(ctx, s, r)
		return
	}
	e.recreate(r, now)
}

// recreate makes the controller create the runner's pod again.
func (e *Emulator) recreate(r *runner, now time.Duration) {
	r.previous, r.uid = r.uid, ""
	r.state, r.since, r.seen, r.lost, r.crashed = runnerCreated, now, false, false, false
}

// finalize is ARC deleting the EphemeralRunner and its finalizer: the pod
// is deleted, then every pod labelled runner-pod=<runner> (workflow pods of
// failed incarnations included), then the EphemeralRunner itself.
func (e *Emulator) finalize(ctx context.Context, s *setState, r *runner) {
	e.deletePod(ctx, s.set.Namespace, r.name, r.uid)
	if linked, err := e.pods.Pods(s.set.Namespace).List(labels.SelectorFromSet(labels.Set{RunnerPodLabel: r.name})); err == nil {
		for _, p := range linked {
			e.deletePod(ctx, p.Namespace, p.Name, p.UID)
		}
	}
	e.deleteEphemeralRunner(ctx, s, r)
}

// runnerPod returns the current incarnation's pod of r, if cached.
func (e *Emulator) runnerPod(s *setState, r *runner) *v1.Pod {
	if r.uid == "" {
		return nil
	}
	pod, _ := e.pods.Pods(s.set.Namespace).Get(r.name)
	if pod == nil || pod.UID != r.uid {
		return nil
	}
	return pod
}
