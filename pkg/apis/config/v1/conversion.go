package v1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
)

func addConversionFuncs(s *runtime.Scheme) error {
	if err := s.AddGeneratedConversionFunc((*WorkflowReservationArgs)(nil), (*config.WorkflowReservationArgs)(nil), func(a, b interface{}, scope conversion.Scope) error {
		return Convert_v1_WorkflowReservationArgs_To_config_WorkflowReservationArgs(a.(*WorkflowReservationArgs), b.(*config.WorkflowReservationArgs), scope)
	}); err != nil {
		return err
	}
	return s.AddGeneratedConversionFunc((*config.WorkflowReservationArgs)(nil), (*WorkflowReservationArgs)(nil), func(a, b interface{}, scope conversion.Scope) error {
		return Convert_config_WorkflowReservationArgs_To_v1_WorkflowReservationArgs(a.(*config.WorkflowReservationArgs), b.(*WorkflowReservationArgs), scope)
	})
}

// Convert_v1_WorkflowReservationArgs_To_config_WorkflowReservationArgs
// converts the versioned args to the internal type. As with generated
// conversions, out may share memory with in.
func Convert_v1_WorkflowReservationArgs_To_config_WorkflowReservationArgs(in *WorkflowReservationArgs, out *config.WorkflowReservationArgs, s conversion.Scope) error {
	out.RunnerSelector = in.RunnerSelector
	out.RunnerPodLabel = ptr.Deref(in.RunnerPodLabel, "")
	out.DefaultWorkflowRequests = in.DefaultWorkflowRequests
	out.DefaultStepRequests = in.DefaultStepRequests
	out.ScoringStrategy = nil
	if in.ScoringStrategy != nil {
		out.ScoringStrategy = &config.ScoringStrategy{Type: config.ScoringStrategyType(in.ScoringStrategy.Type)}
		for _, r := range in.ScoringStrategy.Resources {
			out.ScoringStrategy.Resources = append(out.ScoringStrategy.Resources, config.ResourceSpec{Name: r.Name, Weight: r.Weight})
		}
	}
	return nil
}

// Convert_config_WorkflowReservationArgs_To_v1_WorkflowReservationArgs
// converts the internal args to the versioned type. As with generated
// conversions, out may share memory with in.
func Convert_config_WorkflowReservationArgs_To_v1_WorkflowReservationArgs(in *config.WorkflowReservationArgs, out *WorkflowReservationArgs, s conversion.Scope) error {
	out.RunnerSelector = in.RunnerSelector
	out.RunnerPodLabel = ptr.To(in.RunnerPodLabel)
	out.DefaultWorkflowRequests = in.DefaultWorkflowRequests
	out.DefaultStepRequests = in.DefaultStepRequests
	out.ScoringStrategy = nil
	if in.ScoringStrategy != nil {
		out.ScoringStrategy = &ScoringStrategy{Type: ScoringStrategyType(in.ScoringStrategy.Type)}
		for _, r := range in.ScoringStrategy.Resources {
			out.ScoringStrategy.Resources = append(out.ScoringStrategy.Resources, ResourceSpec{Name: r.Name, Weight: r.Weight})
		}
	}
	return nil
}
