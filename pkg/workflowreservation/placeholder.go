package workflowreservation

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Placeholder pods (reservationMode: Pods). A held reservation is also a pod
// on the runner's node, "<runner>-hold", bound there with nodeName and
// requesting what the reservation holds: the kubelet admits other pods
// against it, other schedulers and cluster autoscalers count it. It is owned
// by the runner pod (garbage collection removes it with the runner) and
// yields to the workflow pod the moment that pod is created: tandem-webhook
// deletes it, with the runner's UID checked and grace 0, before the workflow
// pod is stored, so the kubelet of the node, which watches its pods in
// resourceVersion order, sees the room freed before the pod that takes it.
const (
	// PlaceholderLabel marks a placeholder pod (value "true").
	PlaceholderLabel = "tandem.dev/placeholder"
	// PlaceholderOfAnnotation on a placeholder names the runner pod whose
	// reservation it holds; the runner is also its controller owner.
	PlaceholderOfAnnotation = "tandem.dev/placeholder-of"
	// placeholderSuffix ends a placeholder's name: "<runner>-hold".
	placeholderSuffix = "-hold"
)

// PlaceholderName is the name of the placeholder pod of the runner named
// runner.
func PlaceholderName(runner string) string {
	return suffixedName(runner, placeholderSuffix)
}

// suffixedName is name with suffix, name cut short so that it stays a
// valid pod name.
func suffixedName(name, suffix string) string {
	if limit := 253 - len(suffix); len(name) > limit {
		name = strings.TrimRight(name[:limit], ".-")
	}
	return name + suffix
}

// IsPlaceholder reports whether pod is a placeholder: labelled, naming its
// runner, and controlled by that runner pod.
func IsPlaceholder(pod *v1.Pod) bool {
	if pod.Labels[PlaceholderLabel] != "true" {
		return false
	}
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "Pod" && ref.Name != "" && ref.Name == pod.Annotations[PlaceholderOfAnnotation]
}

// IsPlaceholderOf reports whether pod is the placeholder of the runner
// incarnation runner.
func IsPlaceholderOf(pod, runner *v1.Pod) bool {
	return IsPlaceholder(pod) && pod.Namespace == runner.Namespace && metav1.GetControllerOf(pod).UID == runner.UID
}
