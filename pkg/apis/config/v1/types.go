package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkflowReservationArgs holds arguments used to configure the
// WorkflowReservation plugin.
type WorkflowReservationArgs struct {
	metav1.TypeMeta `json:",inline"`

	// RunnerSelector selects the pods that are ARC runner pods.
	// Defaults to matchLabels {actions-ephemeral-runner: "True"}.
	// +optional
	RunnerSelector *metav1.LabelSelector `json:"runnerSelector,omitempty"`
	// RunnerPodLabel is the label key on workflow pods whose value is the
	// name of the runner pod that created them.
	// Defaults to "runner-pod".
	// +optional
	RunnerPodLabel *string `json:"runnerPodLabel,omitempty"`
	// DefaultWorkflowRequests is the size of a workflow pod, used when
	// neither the runner pod's annotation nor its container hook template
	// specifies one.
	// +optional
	DefaultWorkflowRequests corev1.ResourceList `json:"defaultWorkflowRequests,omitempty"`
	// DefaultStepRequests is extra headroom reserved for container-step
	// pods.
	// +optional
	DefaultStepRequests corev1.ResourceList `json:"defaultStepRequests,omitempty"`
}
