package contract

// Annotations and labels tandem reads on the pods of a runner.
const (
	// WorkflowRequestsAnnotation on a runner pod states the size of its
	// workflow pod, e.g. "cpu=2,memory=4Gi,nvidia.com/gpu=1". It wins over
	// every other source.
	WorkflowRequestsAnnotation = "tandem.dev/workflow-requests"
	// StepRequestsAnnotation on a runner pod adds headroom for the
	// container-step pods that run next to the workflow pod: a size, or
	// StepFromTemplate for the size of a step pod built from the hook
	// template.
	StepRequestsAnnotation = "tandem.dev/step-requests"
	// HostPortsAnnotation on a runner pod declares the host ports its
	// workflow pod will use ("6379,5432/TCP"): the hook turns every service
	// port mapping into a hostPort. They are held with the reservation.
	HostPortsAnnotation = "tandem.dev/host-ports"
	// StepFromTemplate is the value of StepRequestsAnnotation that sizes the
	// step headroom from the hook template.
	StepFromTemplate = "template"
)

// Environment of the runner container that says how its hook works.
const (
	// HookTemplateEnv names the runner container's environment variable
	// that points at the hook template file.
	HookTemplateEnv = "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"
	// HooksEnv is the path of the container hook the runner runs.
	HooksEnv = "ACTIONS_RUNNER_CONTAINER_HOOKS"
	// UseKubeSchedulerEnv, "true": hooks v0.7.0 pin the workflow pod with a
	// required hostname affinity instead of nodeName.
	UseKubeSchedulerEnv = "ACTIONS_RUNNER_USE_KUBE_SCHEDULER"
	// HookRWOEnv, "true": the next hook (upstream PRs #339/#445) requires
	// the runner's node instead of preferring it.
	HookRWOEnv = "ACTIONS_RUNNER_HOOK_RWO"
	// JobContainer is the hook template's name for the job container.
	JobContainer = "$job"
)

// Source names where a reservation's size came from.
type Source string

// The sources of a reservation's size, in the order they are tried.
const (
	// SourceAnnotation is the runner's WorkflowRequestsAnnotation.
	SourceAnnotation Source = "annotation"
	// SourceHookTemplate is the runner's container hook template.
	SourceHookTemplate Source = "hook-template"
	// SourceDefault is the plugin args' defaultWorkflowRequests.
	SourceDefault Source = "default"
)
