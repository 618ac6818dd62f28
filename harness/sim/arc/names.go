// Package arc emulates Actions Runner Controller (gha-runner-scale-set) in
// kubernetes mode and its container hook: runner pods as ARC's
// EphemeralRunner controller creates them, workflow pods as the hook's
// prepare_job creates them for each hook mode, and the hook's wait and
// failure rules. The facts it follows are in ../../shared/ARC-CONTRACT.md
// of the project workspace and in docs/simulator.md.
package arc

import (
	"math/rand"
	"strings"

	"github.com/tandem-scheduler/tandem/contract"
)

// Labels, annotations and environment variables ARC, its chart and the hook use.
const (
	LabelEphemeralRunner   = "actions-ephemeral-runner"
	LabelComponent         = "app.kubernetes.io/component"
	LabelPartOf            = "app.kubernetes.io/part-of"
	LabelScaleSetName      = "actions.github.com/scale-set-name"
	LabelScaleSetNamespace = "actions.github.com/scale-set-namespace"

	AnnotationRunnerGroupName    = "actions.github.com/runner-group-name"
	AnnotationRunnerScaleSetName = "actions.github.com/runner-scale-set-name"
	AnnotationPatchID            = "actions.github.com/patch-id"
	AnnotationRunnerSpecHash     = "actions.github.com/runner-spec-hash"

	// RunnerPodLabel on a workflow pod names its runner pod: the one link
	// between the two.
	RunnerPodLabel = "runner-pod"

	EnvContainerHooks      = "ACTIONS_RUNNER_CONTAINER_HOOKS"
	EnvPodName             = "ACTIONS_RUNNER_POD_NAME"
	EnvRequireJobContainer = "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER"
	EnvHookTemplate        = contract.HookTemplateEnv
	EnvUseKubeScheduler    = "ACTIONS_RUNNER_USE_KUBE_SCHEDULER"
	EnvPrepareJobTimeout   = "ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS"
	EnvClaimName           = "ACTIONS_RUNNER_CLAIM_NAME"
	EnvHookRWO             = contract.HookRWOEnv
	EnvRunnerImage         = "ACTIONS_RUNNER_IMAGE"

	// WorkVolume is the runner's work volume; its generic ephemeral PVC is
	// "<runner pod>-work".
	WorkVolume = "work"
	// JobContainer is the workflow pod's job container.
	JobContainer = "job"
	// maxPodNameLength is the hook's limit on the workflow pod's name.
	maxPodNameLength = 63
	workflowSuffix   = "-workflow"
)

// WorkflowPodName is the name the hook gives the workflow pod: the runner pod
// name cut to 54 characters, then "-workflow".
func WorkflowPodName(runner string) string {
	if limit := maxPodNameLength - len(workflowSuffix); len(runner) > limit {
		runner = runner[:limit]
	}
	return runner + workflowSuffix
}

// WorkClaimName is the name of a runner pod's work PVC.
func WorkClaimName(runner string) string { return runner + "-" + WorkVolume }

// nameAlphabet is what the apiserver's generateName draws from.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// Suffix returns a 5-character generateName-style suffix from r.
func Suffix(r *rand.Rand) string {
	var b strings.Builder
	for range 5 {
		b.WriteByte(nameAlphabet[r.Intn(len(nameAlphabet))])
	}
	return b.String()
}

// RunnerPodName is ARC's name for a runner pod (chart <= 0.14.2):
// "<scale set>-<runner set suffix>-runner-<suffix>".
func RunnerPodName(scaleSet, setSuffix, suffix string) string {
	return scaleSet + "-" + setSuffix + "-runner-" + suffix
}
