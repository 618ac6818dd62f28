package arc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// stepRun is a container step's progress: its Job (hooks v0.7.0, the next
// hook) and pod, or its bare pod (hooks v0.8).
type stepRun struct {
	step      Step
	namespace string
	// job and jobUID are the step Job's; empty for a bare pod.
	job    string
	jobUID types.UID
	// pod and podUID are the step pod's once created (for a Job, by the
	// Job controller's part of the emulator).
	pod     string
	podUID  types.UID
	created time.Duration
	// podCreated is when the Job's pod was created, real time: the Job's
	// status.startTime.
	podCreated time.Time
	seen       bool
	running    bool
	since      time.Duration
	exited     bool
}

// expiringJob is a finished step Job and its pod, deleted at due.
type expiringJob struct {
	namespace, job, pod string
	jobUID, podUID      types.UID
	due                 time.Duration
}

// runStep moves the runner's current container step along, starting it if
// none runs: the hook creates the step's Job or pod and waits for it; the
// step runs for its duration; then, for a Job, its pod exits and the Job
// completes, for a bare pod the hook deletes it. A step pod the kubelet
// rejects, that goes away, or that waits Pending longer than the hook
// waits fails the job.
func (e *Emulator) runStep(ctx context.Context, s *setState, r *runner, runnerPod *v1.Pod, now time.Duration) {
	j := r.job
	st := j.step
	if st == nil {
		e.startStep(ctx, s, r, runnerPod, now)
		return
	}
	if st.job != "" && st.pod == "" {
		e.createJobPod(ctx, st)
	}
	var pod *v1.Pod
	if st.pod != "" {
		pod = e.cachedPod(st.namespace, st.pod, st.podUID)
	}
	switch {
	case pod != nil:
		st.seen = true
	case st.seen:
		j.step = nil
		e.failStep(ctx, s, r, runnerPod, now, ReasonStepPodGone, fmt.Sprintf("step pod %s disappeared", st.pod))
		return
	default:
		pod = &v1.Pod{Status: v1.PodStatus{Phase: v1.PodPending}}
	}
	switch pod.Status.Phase {
	case v1.PodPending, "":
		timeout := StepWaitTimeout
		if st.job == "" {
			timeout = PrepareJobTimeout(runnerPod)
		}
		if now-st.created >= timeout {
			e.failStep(ctx, s, r, runnerPod, now, ReasonStepTimeout, fmt.Sprintf("step pod %s stayed Pending: %s", st.pod, schedulingMessage(pod)))
		}
	case v1.PodRunning:
		if !st.running {
			st.running, st.since = true, now
		}
		if st.exited || now-st.since < st.step.Duration {
			return
		}
		if st.job == "" {
			// Hooks v0.8 exec the step in the pod, then delete it.
			e.deletePod(ctx, st.namespace, st.pod, st.podUID)
			e.stepDone(j, now)
			return
		}
		if err := e.exiter.Exit(ctx, pod, 0); err != nil {
			klog.FromContext(ctx).Error(err, "Ending step pod", "pod", klog.KObj(pod))
		}
		st.exited = true
	case v1.PodSucceeded:
		e.jobFinished(ctx, st, true, now)
		e.stepDone(j, now)
	default:
		if st.job != "" {
			e.jobFinished(ctx, st, false, now)
		} else {
			e.deletePod(ctx, st.namespace, st.pod, st.podUID)
		}
		j.step = nil
		reason := pod.Status.Reason
		if reason == "" {
			reason = string(pod.Status.Phase)
		}
		msg := pod.Status.Message
		if msg == "" {
			msg = fmt.Sprintf("step pod %s failed", st.pod)
		}
		e.failStep(ctx, s, r, runnerPod, now, reason, msg)
	}
}

// stepDone moves the job to its next step; the steps' lateness so far
// delays what follows.
func (e *Emulator) stepDone(j *jobRun, now time.Duration) {
	end := j.step.step.At + j.step.step.Duration
	j.shift = max(j.shift, now-j.started-end)
	j.next++
	j.step = nil
}

// startStep is run_container_step creating the step's Job (and the Job
// controller its pod) or bare pod. Its API calls are not retried: a
// failed call fails the job, as for prepare_job.
func (e *Emulator) startStep(ctx context.Context, s *setState, r *runner, runnerPod *v1.Pod, now time.Duration) {
	j := r.job
	step := j.job.Steps[j.next]
	name := StepName(r.name, e.names)
	mode, ns := s.set.HookMode, s.set.Namespace
	st := &stepRun{step: step, namespace: ns, created: now}
	if mode.stepJobs() {
		job, err := StepJob(runnerPod, mode, s.set.HookTemplate, step, name)
		if err != nil {
			e.failStep(ctx, s, r, runnerPod, now, ReasonHookError, err.Error())
			return
		}
		e.pinToHostname(&job.Spec.Template.Spec, runnerPod.Spec.NodeName)
		created, err := e.client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			e.failStep(ctx, s, r, runnerPod, now, hookErrorReason(err), "creating the step Job: "+err.Error())
			return
		}
		st.job, st.jobUID = created.Name, created.UID
		j.step = st
		e.createJobPod(ctx, st)
		return
	}
	pod, err := StepPod(runnerPod, mode, s.set.HookTemplate, step, name)
	if err != nil {
		e.failStep(ctx, s, r, runnerPod, now, ReasonHookError, err.Error())
		return
	}
	e.pinToHostname(&pod.Spec, runnerPod.Spec.NodeName)
	created, err := e.create(ctx, ns, pod)
	if err != nil {
		e.failStep(ctx, s, r, runnerPod, now, hookErrorReason(err), "creating the step pod: "+err.Error())
		return
	}
	st.pod, st.podUID = created.Name, created.UID
	j.step = st
}

func hookErrorReason(err error) string {
	if apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) {
		return ReasonHookError
	}
	return ReasonHookAPIError
}

// createJobPod is the Job controller creating the pod of a step Job; one
// that fails is tried again on the next round, as the controller does.
func (e *Emulator) createJobPod(ctx context.Context, st *stepRun) {
	job, err := e.client.BatchV1().Jobs(st.namespace).Get(ctx, st.job, metav1.GetOptions{})
	if err == nil && job.UID != st.jobUID {
		err = fmt.Errorf("job %s was replaced", st.job)
	}
	var created *v1.Pod
	if err == nil {
		created, err = e.create(ctx, st.namespace, JobPod(job))
	}
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Creating the step Job's pod failed; retrying", "job", klog.KRef(st.namespace, st.job), "err", err)
		return
	}
	st.pod, st.podUID, st.podCreated = created.Name, created.UID, time.Now()
}

// jobFinished is the Job controller marking a step Job finished once its
// pod ended; the TTL-after-finished controller deletes it StepJobTTL later.
func (e *Emulator) jobFinished(ctx context.Context, st *stepRun, succeeded bool, now time.Duration) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": st.jobUID},
		"status":   FinishedJobStatus(succeeded, st.podCreated, time.Now()),
	})
	if err != nil {
		return
	}
	e.writes.Do(ctx, "jobstatus/"+string(st.jobUID), func(ctx context.Context) error {
		_, err := e.client.BatchV1().Jobs(st.namespace).Patch(ctx, st.job, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	})
	e.expiring = append(e.expiring, expiringJob{
		namespace: st.namespace, job: st.job, jobUID: st.jobUID, pod: st.pod, podUID: st.podUID, due: now + StepJobTTL,
	})
}

// abandonStep is called when a job ends while one of its steps runs: the
// hook's cleanup prunes a bare step pod (it is labelled runner-pod); a step
// Job is nobody's to delete, so its pod goes on, and the Job controller
// still marks it finished.
func (e *Emulator) abandonStep(ctx context.Context, j *jobRun, prune bool) {
	st := j.step
	if st == nil {
		return
	}
	j.step = nil
	if st.job == "" {
		if prune && st.pod != "" {
			e.deletePod(ctx, st.namespace, st.pod, st.podUID)
		}
		return
	}
	e.orphans = append(e.orphans, st)
}

// driveOrphans runs the step Jobs whose job ended: a pod that runs exits
// after the step's duration, a pod that ended finishes its Job, a pod that
// is gone is forgotten.
func (e *Emulator) driveOrphans(ctx context.Context, now time.Duration) {
	keep := e.orphans[:0]
	for _, st := range e.orphans {
		if st.pod == "" {
			e.createJobPod(ctx, st)
			keep = append(keep, st)
			continue
		}
		pod := e.cachedPod(st.namespace, st.pod, st.podUID)
		if pod == nil {
			if !st.seen {
				keep = append(keep, st)
			}
			continue
		}
		st.seen = true
		switch pod.Status.Phase {
		case v1.PodRunning:
			if !st.running {
				st.running, st.since = true, now
			}
			if !st.exited && now-st.since >= st.step.Duration {
				if err := e.exiter.Exit(ctx, pod, 0); err != nil {
					klog.FromContext(ctx).V(4).Info("Step pod of an ended job not running any more; forgetting it", "pod", klog.KObj(pod), "err", err)
					continue
				}
				st.exited = true
			}
			keep = append(keep, st)
		case v1.PodSucceeded, v1.PodFailed:
			e.jobFinished(ctx, st, pod.Status.Phase == v1.PodSucceeded, now)
		default:
			keep = append(keep, st)
		}
	}
	e.orphans = keep
}

// expireJobs deletes the step Jobs whose TTL ran out, and their pods.
func (e *Emulator) expireJobs(ctx context.Context, now time.Duration) {
	keep := e.expiring[:0]
	for _, x := range e.expiring {
		if now < x.due {
			keep = append(keep, x)
			continue
		}
		e.writes.Do(ctx, "jobdelete/"+string(x.jobUID), func(ctx context.Context) error {
			err := e.client.BatchV1().Jobs(x.namespace).Delete(ctx, x.job, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &x.jobUID}, PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
			})
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil
			}
			return err
		})
		if x.pod != "" {
			e.deletePod(ctx, x.namespace, x.pod, x.podUID)
		}
	}
	e.expiring = keep
}

// cachedPod returns the pod of that name and UID from the informer's cache.
func (e *Emulator) cachedPod(namespace, name string, uid types.UID) *v1.Pod {
	pod, _ := e.pods.Pods(namespace).Get(name)
	if pod == nil || pod.UID != uid {
		return nil
	}
	return pod
}

// schedulingMessage is the scheduler's last word on a pending pod.
func schedulingMessage(pod *v1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Message != "" {
			return c.Message
		}
	}
	return "not scheduled"
}

// failStep fails the job in its container step: the result says so
// (Result.InStep).
func (e *Emulator) failStep(ctx context.Context, s *setState, r *runner, runnerPod *v1.Pod, now time.Duration, reason, message string) {
	r.job.stepFailed = true
	e.finish(ctx, s, r, runnerPod, now, false, reason, message)
}
