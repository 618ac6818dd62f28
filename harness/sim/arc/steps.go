package arc

import (
	"fmt"
	"maps"
	"math/rand"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Container steps (`uses: docker://...`, container actions) run in pods of
// their own, built by the hook's run_container_step (ARC-CONTRACT.md,
// "Container-step pods"):
//   - hooks v0.7.0 and the next hook: a batch/v1 Job per step, labelled
//     runner-pod=<runner> (the Job only: its pod carries the hook
//     template's labels and links to the Job through its owner reference),
//     backoffLimit 0, ttlSecondsAfterFinished 300, placed like the workflow
//     pod, on the runner's work PVC;
//   - hooks v0.8 (novolume): a bare pod labelled runner-pod=<runner>, not
//     pinned, on emptyDirs.
//
// Both merge the hook template as for the workflow pod: "$job" into the
// step container, other non-"$" containers appended, every other spec key
// applied. So a step pod is the workflow pod without its services.

// StepJobTTL is the ttlSecondsAfterFinished the hooks give a step Job.
const StepJobTTL = 300 * time.Second

// StepWaitTimeout is how long hooks v0.7.0 (and the next hook) wait for a
// step Job's pod to leave Pending: DEFAULT_WAIT_FOR_POD_TIME_SECONDS.
// Hooks v0.8 wait for the step pod as prepare_job waits for the workflow
// pod (ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS).
const StepWaitTimeout = 10 * time.Minute

// Job failure reasons of container steps that are not a pod's own reason.
const (
	// ReasonStepTimeout: the step pod stayed Pending longer than the hook waits.
	ReasonStepTimeout = "StepPodTimeout"
	// ReasonStepPodGone: the step pod disappeared while the hook waited for it.
	ReasonStepPodGone = "StepPodGone"
)

const (
	stepSuffix       = "-step-"
	stepSuffixLength = 8
	hexDigits        = "0123456789abcdef"
)

// Step is a container step of a job. It starts At after the job's steps
// start (its workflow pod runs) and runs for Duration; a job's steps run
// one after another, within the job's duration. A step that starts late
// (its pod waits Pending) delays the rest of the job by as much.
type Step struct {
	At, Duration time.Duration
	// Image is the step's container image (default alpine:3).
	Image string
}

// StepName is the name the hooks give a step Job or pod: the runner pod
// name cut to 49 characters, "-step-" and 8 hex digits (the first 8
// characters of a random UUID).
func StepName(runner string, r *rand.Rand) string {
	if limit := maxPodNameLength - len(stepSuffix) - stepSuffixLength; len(runner) > limit {
		runner = runner[:limit]
	}
	var b strings.Builder
	b.WriteString(runner)
	b.WriteString(stepSuffix)
	for range stepSuffixLength {
		b.WriteByte(hexDigits[r.Intn(len(hexDigits))])
	}
	return b.String()
}

// stepContainer is the container run_container_step builds: hooks v0.7.0
// (and the next hook) run the action's entrypoint in it; hooks v0.8 keep
// it alive (tail -f /dev/null) and exec the step in it.
func stepContainer(mode HookMode, image string) v1.Container {
	if image == "" {
		image = "alpine:3"
	}
	if !mode.stepJobs() {
		return v1.Container{
			Name: JobContainer, Image: image, WorkingDir: "/__w",
			Command: []string{"tail"}, Args: []string{"-f", "/dev/null"},
			VolumeMounts: []v1.VolumeMount{
				{Name: externalsVolume, MountPath: "/__e"},
				{Name: WorkVolume, MountPath: "/__w"},
				{Name: githubVolume, MountPath: "/github"},
			},
		}
	}
	return v1.Container{
		Name: JobContainer, Image: image, WorkingDir: "/github/workspace",
		VolumeMounts: []v1.VolumeMount{
			{Name: WorkVolume, MountPath: "/__w"},
			{Name: WorkVolume, MountPath: "/github/workspace", SubPath: "repo/repo"},
			{Name: WorkVolume, MountPath: "/github/file_commands", SubPath: "_temp/_runner_file_commands"},
			{Name: WorkVolume, MountPath: "/github/home", SubPath: "_temp/_github_home"},
			{Name: WorkVolume, MountPath: "/github/workflow", SubPath: "_temp/_github_workflow"},
		},
	}
}

const (
	externalsVolume = "externals"
	githubVolume    = "github"
)

// stepPodSpec builds the step pod of runner (bound to its node) in mode,
// merged with the hook template; labels are the pod's own to start from.
func stepPodSpec(runner *v1.Pod, mode HookMode, hookTemplate string, step Step, labels map[string]string) (*v1.Pod, error) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{}},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers:    []v1.Container{stepContainer(mode, step.Image)},
		},
	}
	if mode.stepJobs() {
		if err := placement(mode, runner.Spec.NodeName, &pod.Spec); err != nil {
			return nil, err
		}
		pod.Spec.Volumes = workClaim(runner)
	} else {
		for _, name := range []string{externalsVolume, githubVolume, WorkVolume} {
			pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
		}
	}
	if strings.TrimSpace(hookTemplate) == "" {
		return pod, nil
	}
	return mergeTemplate(pod, hookTemplate)
}

// StepPod builds the bare step pod hooks v0.8 create for runner: named
// name, labelled runner-pod=<runner> plus the template's labels, not
// pinned, on emptyDirs, merged with the hook template.
func StepPod(runner *v1.Pod, mode HookMode, hookTemplate string, step Step, name string) (*v1.Pod, error) {
	if mode.stepJobs() {
		return nil, fmt.Errorf("hook mode %s runs container steps as Jobs", mode)
	}
	pod, err := stepPodSpec(runner, mode, hookTemplate, step, map[string]string{RunnerPodLabel: runner.Name})
	if err != nil {
		return nil, err
	}
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	pod.Name, pod.Namespace = name, runner.Namespace
	return pod, nil
}

// StepJob builds the batch/v1 Job hooks v0.7.0 and the next hook create for
// a container step of runner: named name, labelled runner-pod=<runner>
// plus the template's labels and annotations; backoffLimit 0,
// ttlSecondsAfterFinished 300; its pod template carries the template's
// labels and annotations only, is placed like the workflow pod and mounts
// the work PVC.
func StepJob(runner *v1.Pod, mode HookMode, hookTemplate string, step Step, name string) (*batchv1.Job, error) {
	if !mode.stepJobs() {
		return nil, fmt.Errorf("hook mode %s runs container steps as bare pods", mode)
	}
	pod, err := stepPodSpec(runner, mode, hookTemplate, step, map[string]string{})
	if err != nil {
		return nil, err
	}
	labels := map[string]string{RunnerPodLabel: runner.Name}
	maps.Copy(labels, pod.Labels)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: runner.Namespace, Labels: labels, Annotations: maps.Clone(pod.Annotations)},
		Spec: batchv1.JobSpec{
			TTLSecondsAfterFinished: ptr.To(int32(StepJobTTL / time.Second)),
			BackoffLimit:            ptr.To(int32(0)),
			Template:                v1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec},
		},
	}, nil
}

// JobPod is the pod the Job controller creates for job (as the apiserver
// returned it, with the selector labels it adds to the template): named
// "<job>-" plus a suffix the apiserver generates, the template's labels and
// annotations, controlled by the Job. The Job controller's tracking
// finalizer is left out: no controller would remove it.
func JobPod(job *batchv1.Job) *v1.Pod {
	tmpl := job.Spec.Template.DeepCopy()
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: job.Name + "-",
			Namespace:    job.Namespace,
			Labels:       tmpl.Labels,
			Annotations:  tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: tmpl.Spec,
	}
}

// FinishedJobStatus is the status the Job controller writes once the Job's
// one pod (backoffLimit 0) ended: Complete (with SuccessCriteriaMet) when it
// succeeded, Failed (with FailureTarget, BackoffLimitExceeded) when not.
func FinishedJobStatus(succeeded bool, started, now time.Time) batchv1.JobStatus {
	start, end := metav1.NewTime(started), metav1.NewTime(now)
	status := batchv1.JobStatus{StartTime: &start, Ready: ptr.To(int32(0)), Terminating: ptr.To(int32(0)),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}}
	cond := func(t batchv1.JobConditionType, reason, message string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: v1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: end, LastTransitionTime: end}
	}
	if succeeded {
		status.Succeeded, status.CompletionTime = 1, &end
		status.Conditions = []batchv1.JobCondition{
			cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"),
			cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"),
		}
		return status
	}
	status.Failed = 1
	status.Conditions = []batchv1.JobCondition{
		cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"),
		cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"),
	}
	return status
}
