// Package sizing turns a runner pod into the sizes tandem reserves for it
// (Sizer.Size): the workflow pod's request, the step headroom for
// container-step pods, and the host ports the workflow pod will use.
//
// The sources, in the order they are tried, a broken one recorded as a
// problem and the next one tried:
//
//   - the runner's contract.WorkflowRequestsAnnotation;
//   - its container hook template (contract.HookTemplateEnv, resolved
//     through the runner container's volume mounts to a ConfigMap key, read
//     through a ConfigMap lister and parsed once per ConfigMap version);
//   - the plugin args' defaultWorkflowRequests.
//
// Step headroom comes from contract.StepRequestsAnnotation (a size, or
// "template"), else from the args; host ports from
// contract.HostPortsAnnotation, else from the args. HookMode says, for the
// runner's events, how its hook will place the workflow pod.
//
// Who can set these: whoever may create the runner pod (its annotations,
// its env and volumes) and whoever may change the hook-template ConfigMap.
// They size the room held for the runner's workflow pod.
package sizing
