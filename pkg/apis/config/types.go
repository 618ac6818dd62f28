package config

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkflowReservationArgs holds arguments used to configure the
// WorkflowReservation plugin.
type WorkflowReservationArgs struct {
	metav1.TypeMeta

	// RunnerSelector selects the pods that are ARC runner pods.
	RunnerSelector *metav1.LabelSelector
	// RunnerPodLabel is the label key on workflow pods whose value is the
	// name of the runner pod that created them.
	RunnerPodLabel string
	// DefaultWorkflowRequests is the size of a workflow pod, used when
	// neither the runner pod's annotation nor its container hook template
	// specifies one. May be empty.
	DefaultWorkflowRequests v1.ResourceList
	// DefaultStepRequests is extra headroom reserved for container-step
	// pods. May be empty.
	DefaultStepRequests v1.ResourceList
}
