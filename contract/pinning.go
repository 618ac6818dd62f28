package contract

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PinnedTo reports whether the pod is tied to node by its own spec: a
// hostname nodeSelector naming it, or a required node affinity every term of
// which names it on the hostname label (or by metadata.name). That is how
// the hooks pin a workflow pod to the runner's node (v0.7.0 with
// ACTIONS_RUNNER_USE_KUBE_SCHEDULER, the RWO mode of the next hook). Any
// other required affinity (an architecture, a pool) leaves the pod free to
// go elsewhere.
func PinnedTo(pod *v1.Pod, node string) bool {
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

// MayClaimOn reports whether pod, labelled as a workflow pod of a runner
// whose reservation is on node, may claim it: it is bound there, or not
// bound and free to be scheduled there (not pinned, by nodeName or its own
// spec, to some other node). Anyone who may create pods in the runner's
// namespace may label one with the runner's name: anywhere else, such a pod
// is an ordinary pod and claims, voids or frees nothing.
func MayClaimOn(pod *v1.Pod, node string) bool {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName == node
	}
	if _, ok := pod.Spec.NodeSelector[v1.LabelHostname]; ok {
		return PinnedTo(pod, node)
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if !pinsAHost(t) || termNames(t, node) {
			return true // this term lets it go to node, or to no one node
		}
	}
	return false
}

// pinsAHost reports whether the node selector term allows one named node
// only (on the hostname label or by metadata.name).
func pinsAHost(t v1.NodeSelectorTerm) bool {
	for _, r := range t.MatchExpressions {
		if r.Key == v1.LabelHostname && r.Operator == v1.NodeSelectorOpIn && len(r.Values) == 1 {
			return true
		}
	}
	for _, r := range t.MatchFields {
		if r.Key == metav1.ObjectNameField && r.Operator == v1.NodeSelectorOpIn && len(r.Values) == 1 {
			return true
		}
	}
	return false
}
