package config

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WorkflowReservationArgs) DeepCopyInto(out *WorkflowReservationArgs) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	out.RunnerSelector = in.RunnerSelector.DeepCopy()
	out.DefaultWorkflowRequests = in.DefaultWorkflowRequests.DeepCopy()
	out.DefaultStepRequests = in.DefaultStepRequests.DeepCopy()
	if in.ScoringStrategy != nil {
		out.ScoringStrategy = &ScoringStrategy{Type: in.ScoringStrategy.Type}
		out.ScoringStrategy.Resources = append([]ResourceSpec(nil), in.ScoringStrategy.Resources...)
	}
}

// DeepCopy creates a new WorkflowReservationArgs by deep-copying the receiver.
func (in *WorkflowReservationArgs) DeepCopy() *WorkflowReservationArgs {
	if in == nil {
		return nil
	}
	out := new(WorkflowReservationArgs)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WorkflowReservationArgs) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
