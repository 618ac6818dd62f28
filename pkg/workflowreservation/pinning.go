package workflowreservation

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pinnedTo reports whether the pod is tied to node by its own spec: a
// hostname nodeSelector naming it, or a required node affinity every term of
// which names it on the hostname label (or by metadata.name). That is how
// the hooks pin a workflow pod to the runner's node (v0.7.0 with
// ACTIONS_RUNNER_USE_KUBE_SCHEDULER, the RWO mode of the next hook). Any
// other required affinity (an architecture, a pool) leaves the pod free to
// go elsewhere.
func pinnedTo(pod *v1.Pod, node string) bool {
	if v, ok := pod.Spec.NodeSelector[v1.LabelHostname]; ok {
		return v == node
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return false
	}
	for _, t := range terms {
		if !termNames(t, node) {
			return false
		}
	}
	return true
}

// termNames reports whether the node selector term allows node only.
func termNames(t v1.NodeSelectorTerm, node string) bool {
	only := func(r v1.NodeSelectorRequirement, key string) bool {
		return r.Key == key && r.Operator == v1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == node
	}
	for _, r := range t.MatchExpressions {
		if only(r, v1.LabelHostname) {
			return true
		}
	}
	for _, r := range t.MatchFields {
		if only(r, metav1.ObjectNameField) {
			return true
		}
	}
	return false
}
