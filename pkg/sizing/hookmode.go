package sizing

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/tandem-scheduler/tandem/contract"
)

// HookMode says, for the runner's events, how its hook will place the
// workflow pod, as far as the runner pod shows it: the hook it runs, its
// env, and whether it has the `work` volume the pinned modes share.
func HookMode(pod *v1.Pod) string {
	env := map[string]string{}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Value != "" {
				env[e.Name] = e.Value
			}
		}
	}
	work := false
	for _, v := range pod.Spec.Volumes {
		work = work || (v.Name == "work" && (v.Ephemeral != nil || v.PersistentVolumeClaim != nil))
	}
	hooks := env[contract.HooksEnv]
	switch {
	case hooks == "":
		return ""
	case strings.Contains(hooks, "k8s-novolume"):
		return "kubernetes-novolume (workflow pod not pinned; it prefers the reserved node)"
	case strings.EqualFold(env[contract.HookRWOEnv], "true"):
		return "kubernetes, RWO (workflow pod requires the runner's node)"
	case strings.EqualFold(env[contract.UseKubeSchedulerEnv], "true"):
		return "kubernetes with ACTIONS_RUNNER_USE_KUBE_SCHEDULER (workflow pod pinned by a required hostname affinity, scheduled)"
	case work:
		return "kubernetes (workflow pod pinned with nodeName: it bypasses every scheduler)"
	default:
		return "kubernetes (no work volume seen)"
	}
}
