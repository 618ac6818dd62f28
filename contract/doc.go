// Package contract is tandem's wire contract: the names and forms that
// tandem writes on pods and events and reads back from them. The scheduler
// plugin, tandem-webhook, the simulator's invariant checker and
// kubectl-tandem all read them from here, so that they cannot drift apart.
//
// It is a module of its own that imports only k8s.io/api and apimachinery,
// as k8s.io/api is: kubectl-tandem, which go install builds without the
// scheduler's replace directives, imports it as the scheduler does.
//
// Who can set what tandem reads, and what it lets them do:
//
//	key                                   set by                       what tandem does with it
//	WorkflowRequestsAnnotation            the runner pod's author      sizes the reservation of a runner
//	StepRequestsAnnotation                the runner pod's author      adds step headroom to it
//	HostPortsAnnotation                   the runner pod's author      holds host ports with it
//	HookTemplateEnv (runner container)    the runner pod's author      names the hook template that sizes it
//	ReservationAnnotation                 the Binding tandem writes    rebuilds the reservation after a restart,
//	                                      (and anyone who may update   only on a runner of a tandem profile whose
//	                                      the pod)                     UID it names (Recorded.Validate)
//	runner-pod label (runnerPodLabel)     the workflow pod's author    claims the named runner's reservation
//	PlaceholderLabel, PairPodLabel        tandem; anyone who may       placeholder or pair pod only when the
//	                                      create pods                  runner pod named is also its controller
//	EphemeralRunner status.jobId          ARC's listener               starts the grace of a job without a
//	                                                                   container
package contract
