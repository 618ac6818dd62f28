package arc

import (
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// DefaultPrepareJobTimeout is how long the hook waits for the workflow pod to
// run when ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS is not set.
const DefaultPrepareJobTimeout = 600 * time.Second

// Job failure reasons that are not a pod's own status reason.
const (
	// ReasonPrepareJobTimeout: the workflow pod stayed Pending too long.
	ReasonPrepareJobTimeout = "PrepareJobTimeout"
	// ReasonWorkflowPodGone: the workflow pod disappeared while the hook waited.
	ReasonWorkflowPodGone = "WorkflowPodGone"
	// ReasonJobContainerRequired: a job without a container on a runner
	// with ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER=true.
	ReasonJobContainerRequired = "JobContainerRequired"
)

// Prepare is the hook's view of the workflow pod while prepare_job waits.
type Prepare int

const (
	// Waiting means the pod is Pending and the timeout has not passed.
	Waiting Prepare = iota
	// Ready means the pod is Running; the job's steps run.
	Ready
	// Failed means the job fails; the hook deletes the pod.
	Failed
)

// PrepareOutcome applies the hook's rules to the workflow pod (nil when it is
// gone) after waiting for waited: Running is success, Pending keeps waiting
// until timeout, any other phase fails the job at once. The reason of a
// failure is the pod's status reason (e.g. OutOfcpu), else its phase.
func PrepareOutcome(pod *v1.Pod, waited, timeout time.Duration) (Prepare, string) {
	if pod == nil {
		return Failed, ReasonWorkflowPodGone
	}
	switch pod.Status.Phase {
	case v1.PodRunning:
		return Ready, ""
	case v1.PodPending, "":
		if waited >= timeout {
			return Failed, ReasonPrepareJobTimeout
		}
		return Waiting, ""
	}
	if pod.Status.Reason != "" {
		return Failed, pod.Status.Reason
	}
	return Failed, string(pod.Status.Phase)
}

// PrepareJobTimeout reads ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS from the
// runner container; unset or not a positive integer means the default.
func PrepareJobTimeout(runner *v1.Pod) time.Duration {
	if v, ok := runnerEnv(runner, EnvPrepareJobTimeout); ok {
		if s, err := strconv.Atoi(v); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
	}
	return DefaultPrepareJobTimeout
}

// runnerEnv returns a literal env value of the runner pod's runner container
// (the first container when none is named "runner").
func runnerEnv(runner *v1.Pod, name string) (string, bool) {
	if len(runner.Spec.Containers) == 0 {
		return "", false
	}
	c := &runner.Spec.Containers[0]
	for i := range runner.Spec.Containers {
		if runner.Spec.Containers[i].Name == RunnerContainer {
			c = &runner.Spec.Containers[i]
		}
	}
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}
