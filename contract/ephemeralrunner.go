package contract

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// EphemeralRunnerResource is ARC's EphemeralRunner. ARC writes the job a
// runner took into its status; the EphemeralRunner has the runner pod's
// name.
var EphemeralRunnerResource = schema.GroupVersionResource{Group: "actions.github.com", Version: "v1alpha1", Resource: "ephemeralrunners"}

// EphemeralRunnerJob returns the job an EphemeralRunner has taken
// (status.jobId, else status.jobRequestId), "" when none.
func EphemeralRunnerJob(obj *unstructured.Unstructured) string {
	if id, ok, _ := unstructured.NestedString(obj.Object, "status", "jobId"); ok && id != "" {
		return id
	}
	if id, ok, _ := unstructured.NestedInt64(obj.Object, "status", "jobRequestId"); ok && id != 0 {
		return fmt.Sprint(id)
	}
	return ""
}

// EphemeralRunnerKind is the kind of EphemeralRunnerResource.
const EphemeralRunnerKind = "EphemeralRunner"

// ControllingEphemeralRunner returns the UID of the EphemeralRunner that the
// pod's controller reference names, if that is ARC's way of owning a runner
// pod: kind EphemeralRunner of actions.github.com, of the pod's own name
// (ARC names the pod after its EphemeralRunner and makes it the
// controller). Anyone who creates a pod can write such a reference; only
// the EphemeralRunner's UID, checked against the API, makes it ARC's.
func ControllingEphemeralRunner(pod *v1.Pod) (types.UID, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != EphemeralRunnerKind || ref.Name != pod.Name || ref.UID == "" {
		return "", false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != EphemeralRunnerResource.Group {
		return "", false
	}
	return ref.UID, true
}
