package contract

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
