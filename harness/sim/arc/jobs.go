package arc

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ReasonHookError means the hook could not create the workflow pod (e.g. its
// name is taken: two long runner names that share their first 54 characters).
const ReasonHookError = "HookError"

// ReasonHookAPIError means an API call of the hook's prepare_job failed
// (the apiserver did not answer): the hook does not retry, the job fails.
const ReasonHookAPIError = "HookAPIError"

// jobRun is a job's progress on its runner.
type jobRun struct {
	job      Job
	assigned time.Duration
	// workflow and workflowUID are the workflow pod's once the hook created it.
	workflow    string
	workflowUID types.UID
	created     time.Duration
	seen        bool
	running     bool
	started     time.Duration
	node        string
	// step is the container step running now; next is the next step to
	// start; shift is how late the steps run (pods that waited Pending).
	step  *stepRun
	next  int
	shift time.Duration
	// stepFailed: the job failed in a container step.
	stepFailed bool
}

// advance moves a busy runner's job along: the hook creates the workflow pod
// after its delay, waits for it under the hook's rules, then the steps run
// for the job's duration, its container steps in pods of their own.
func (e *Emulator) advance(ctx context.Context, s *setState, r *runner, runnerPod *v1.Pod, now time.Duration) {
	j := r.job
	switch {
	case j.running:
		steps := j.job.Steps
		if j.step != nil || (j.next < len(steps) && now-j.started-j.shift >= steps[j.next].At) {
			e.runStep(ctx, s, r, runnerPod, now)
			return
		}
		if j.next == len(steps) && now-j.started-j.shift >= j.job.Duration {
			e.finish(ctx, s, r, runnerPod, now, true, "", "")
		}
	case j.workflow == "":
		if !j.job.Container {
			if s.set.RequireJobContainer {
				e.finish(ctx, s, r, runnerPod, now, false, ReasonJobContainerRequired,
					"Jobs without a job container are forbidden on this runner")
				return
			}
			j.running, j.started, j.node = true, now, runnerPod.Spec.NodeName
			return
		}
		if now-j.assigned < s.timing.HookDelay {
			return
		}
		e.prepareJob(ctx, s, r, runnerPod, now)
	default:
		wf, _ := e.pods.Pods(s.set.Namespace).Get(j.workflow)
		if wf != nil && wf.UID != j.workflowUID {
			wf = nil // another incarnation's, of the same name
		}
		if wf != nil {
			j.seen = true
		} else if !j.seen {
			// Created but not in the cache yet: the hook would read it Pending.
			wf = &v1.Pod{Status: v1.PodStatus{Phase: v1.PodPending}}
		}
		switch outcome, reason := PrepareOutcome(wf, now-j.created, PrepareJobTimeout(runnerPod)); outcome {
		case Ready:
			j.running, j.started, j.node = true, now, wf.Spec.NodeName
		case Failed:
			msg := fmt.Sprintf("workflow pod %s did not start", j.workflow)
			switch {
			case wf != nil && wf.Status.Message != "":
				msg = wf.Status.Message
			case wf != nil && reason == ReasonPrepareJobTimeout:
				msg = fmt.Sprintf("workflow pod %s stayed Pending: %s", j.workflow, schedulingMessage(wf))
			}
			if wf != nil && wf.Spec.NodeName != "" {
				j.node = wf.Spec.NodeName
			}
			e.finish(ctx, s, r, runnerPod, now, false, reason, msg)
		}
	}
}

// prepareJob is the hook's prepare_job: it prunes the pods labelled
// runner-pod=<runner> (a failed incarnation's workflow pod), then creates the
// workflow pod. If one of its API calls fails, so does the job: the hook
// does not retry.
func (e *Emulator) prepareJob(ctx context.Context, s *setState, r *runner, runnerPod *v1.Pod, now time.Duration) {
	j := r.job
	pods := e.client.CoreV1().Pods(s.set.Namespace)
	stale, err := pods.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{RunnerPodLabel: r.name}).String()})
	if err != nil {
		e.finish(ctx, s, r, runnerPod, now, false, ReasonHookAPIError, "pruning pods: "+err.Error())
		return
	}
	zero := int64(0)
	for i := range stale.Items {
		p := &stale.Items[i]
		err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			e.finish(ctx, s, r, runnerPod, now, false, ReasonHookAPIError, "pruning pods: "+err.Error())
			return
		}
		klog.FromContext(ctx).V(2).Info("Hook pruned a pod of the runner", "pod", klog.KObj(p), "runner", klog.KObj(runnerPod))
	}
	pod, err := WorkflowPod(runnerPod, s.set.HookMode, s.set.HookTemplate, j.job.Spec)
	if err != nil {
		e.finish(ctx, s, r, runnerPod, now, false, ReasonHookError, err.Error())
		return
	}
	e.pinToHostname(&pod.Spec, runnerPod.Spec.NodeName)
	created, err := e.create(ctx, s.set.Namespace, pod)
	switch {
	case apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err):
		e.finish(ctx, s, r, runnerPod, now, false, ReasonHookError, err.Error())
		return
	case err != nil:
		e.finish(ctx, s, r, runnerPod, now, false, ReasonHookAPIError, "creating the workflow pod: "+err.Error())
		return
	}
	j.workflow, j.workflowUID, j.created = created.Name, created.UID, now
}

// record adds the result of the job r holds. A container step still
// running is left to go on by itself (see abandonStep).
func (e *Emulator) record(ctx context.Context, r *runner, runnerPod *v1.Pod, now time.Duration, ok bool, reason, message string) {
	j := r.job
	e.abandonStep(ctx, j, false)
	res := Result{Job: j.job, Runner: r.name, Node: j.node, Ended: now, Succeeded: ok, Reason: reason, Message: message, InStep: j.stepFailed}
	if res.Node == "" && runnerPod != nil {
		res.Node = runnerPod.Spec.NodeName
	}
	if j.running {
		res.Started = j.started
	} else {
		res.Started = -1
	}
	e.results = append(e.results, res)
	e.ended.Add(1)
}

// finish records the job's result and cleans up as the hook and runner do:
// the workflow pod and a bare step pod are deleted (grace 0), the runner
// exits 0 (a failed job is
// reported to GitHub, the ephemeral runner still exits cleanly) and ARC then
// deletes its pod.
func (e *Emulator) finish(ctx context.Context, s *setState, r *runner, runnerPod *v1.Pod, now time.Duration, ok bool, reason, message string) {
	j := r.job
	step := j.step
	e.record(ctx, r, runnerPod, now, ok, reason, message)
	logger := klog.FromContext(ctx)
	node := e.results[len(e.results)-1].Node
	if ok {
		logger.V(2).Info("Job succeeded", "job", j.job.ID, "runner", r.name, "node", node)
	} else {
		logger.V(2).Info("Job failed", "job", j.job.ID, "runner", r.name, "node", node, "reason", reason, "message", message)
	}
	if j.workflow != "" {
		e.deletePod(ctx, s.set.Namespace, j.workflow, j.workflowUID)
	}
	if step != nil && step.job == "" && step.pod != "" {
		// cleanup_job prunes the pods labelled runner-pod: a bare step pod too.
		e.deletePod(ctx, step.namespace, step.pod, step.podUID)
	}
	r.job, r.state, r.since = nil, runnerExiting, now
	if runnerPod != nil {
		if err := e.exiter.Exit(ctx, runnerPod, 0); err != nil {
			logger.Error(err, "Ending runner pod", "pod", klog.KObj(runnerPod))
		}
	}
}
