package contract

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Placeholder pods (reservationMode: Pods). A held reservation is also a pod
// on the runner's node, "<runner>-hold", bound there with nodeName and
// requesting what the reservation holds. It is controlled by the runner pod
// and yields to the workflow pod.
const (
	// PlaceholderLabel marks a placeholder pod (value "true").
	PlaceholderLabel = "tandem.dev/placeholder"
	// PlaceholderOfAnnotation on a placeholder names the runner pod whose
	// reservation it holds; the runner is also its controller owner.
	PlaceholderOfAnnotation = "tandem.dev/placeholder-of"
	// PlaceholderSizeAnnotation on a placeholder is the size it was created
	// for: admission may change its requests, and it must not be recreated
	// for that.
	PlaceholderSizeAnnotation = "tandem.dev/placeholder-size"
	// placeholderSuffix ends a placeholder's name: "<runner>-hold".
	placeholderSuffix = "-hold"
)

// Pair pods. While a runner waits for room for itself and its workflow pod,
// a pending pod of the pair's size, "<runner>-pair", stands for it so that
// cluster autoscalers add a node where the pair fits. tandem never binds it.
const (
	// PairPodLabel marks a pair pod (value "true").
	PairPodLabel = "tandem.dev/pair-pod"
	// PairOfAnnotation on a pair pod names the runner it stands for (the
	// runner is also its controller owner).
	PairOfAnnotation = "tandem.dev/pair-of"
	// PairSizeAnnotation on a pair pod is the size it was created for:
	// admission (a LimitRange's defaults, a mutating webhook) may change its
	// requests, and it must not be recreated for that.
	PairSizeAnnotation = "tandem.dev/pair-size"
	// pairPodSuffix ends a pair pod's name: "<runner>-pair".
	pairPodSuffix = "-pair"
)

// PlaceholderName is the name of the placeholder pod of the runner named
// runner.
func PlaceholderName(runner string) string {
	return suffixedName(runner, placeholderSuffix)
}

// PairPodName is the name of the pair pod of the runner named runner.
func PairPodName(runner string) string {
	return suffixedName(runner, pairPodSuffix)
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
	return markedAndControlled(pod, PlaceholderLabel, PlaceholderOfAnnotation)
}

// IsPlaceholderOf reports whether pod is the placeholder of the runner
// incarnation runner.
func IsPlaceholderOf(pod, runner *v1.Pod) bool {
	return IsPlaceholder(pod) && pod.Namespace == runner.Namespace && metav1.GetControllerOf(pod).UID == runner.UID
}

// IsPairPod reports whether pod is a pair pod: labelled, naming its runner,
// and controlled by that runner pod.
func IsPairPod(pod *v1.Pod) bool {
	return markedAndControlled(pod, PairPodLabel, PairOfAnnotation)
}

// markedAndControlled reports whether pod carries label "true" and is
// controlled by the pod that annotation names.
func markedAndControlled(pod *v1.Pod, label, ofAnnotation string) bool {
	if pod.Labels[label] != "true" {
		return false
	}
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "Pod" && ref.Name != "" && ref.Name == pod.Annotations[ofAnnotation]
}

// workflowPodSuffix ends the name of the workflow pod a container hook
// creates: the runner pod's name, cut to 54 characters, + "-workflow".
const workflowPodSuffix = "-workflow"

// ClaimOrder orders the pods labelled with a runner's name as they claim
// its reservation: by creation, then the hook's workflow pod before the
// others, then by name. The first of a runner incarnation's pods on its
// node is its workflow pod, which claims; the later ones are container-step
// pods (hooks v0.8 label them too). Creation times have whole seconds, and
// a step pod created in the workflow pod's second sorts first by name
// (r1-step-… before r1-workflow): the name's suffix breaks that tie, never
// more (the label, not the name, links a pod to its runner).
func ClaimOrder(a, b *v1.Pod) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	aw, bw := strings.HasSuffix(a.Name, workflowPodSuffix), strings.HasSuffix(b.Name, workflowPodSuffix)
	switch {
	case aw && !bw:
		return -1
	case bw && !aw:
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}
