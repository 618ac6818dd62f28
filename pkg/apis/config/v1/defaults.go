package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

const (
	// DefaultRunnerSelectorLabel is the label key that, together with
	// DefaultRunnerSelectorValue, forms the default RunnerSelector. ARC sets
	// it on ephemeral runner pods.
	DefaultRunnerSelectorLabel = "actions-ephemeral-runner"
	// DefaultRunnerSelectorValue is the label value of the default RunnerSelector.
	DefaultRunnerSelectorValue = "True"
	// DefaultRunnerPodLabel is the default RunnerPodLabel.
	DefaultRunnerPodLabel = "runner-pod"
	// DefaultReconcileInterval is the default ReconcileInterval.
	DefaultReconcileInterval = time.Minute
	// DefaultNoWorkflowPodGrace is the default NoWorkflowPodGrace.
	DefaultNoWorkflowPodGrace = 2 * time.Minute
	// DefaultReservationMode keeps reservations in tandem's accounting.
	DefaultReservationMode = "Memory"
	// DefaultPlaceholderImage is the placeholder and pair pods' image.
	DefaultPlaceholderImage = "pause:3.10"
	// DefaultPodInitialBackoffSeconds is kube-scheduler's default.
	DefaultPodInitialBackoffSeconds = 1
	// DefaultPodMaxBackoffSeconds is kube-scheduler's default.
	DefaultPodMaxBackoffSeconds = 10
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_WorkflowReservationArgs sets the default parameters for the
// WorkflowReservation plugin.
func SetDefaults_WorkflowReservationArgs(obj *WorkflowReservationArgs) {
	if obj.RunnerSelector == nil {
		obj.RunnerSelector = &metav1.LabelSelector{
			MatchLabels: map[string]string{DefaultRunnerSelectorLabel: DefaultRunnerSelectorValue},
		}
	}
	if obj.RunnerPodLabel == nil {
		obj.RunnerPodLabel = ptr.To(DefaultRunnerPodLabel)
	}
	if obj.ReconcileInterval == nil {
		obj.ReconcileInterval = &metav1.Duration{Duration: DefaultReconcileInterval}
	}
	if obj.StepRequestsFromHookTemplate == nil {
		obj.StepRequestsFromHookTemplate = ptr.To(false)
	}
	if obj.NoWorkflowPodGrace == nil {
		obj.NoWorkflowPodGrace = &metav1.Duration{Duration: DefaultNoWorkflowPodGrace}
	}
	if obj.PairPods == nil {
		obj.PairPods = ptr.To(true)
	}
	if obj.ReservationMode == nil {
		obj.ReservationMode = ptr.To(DefaultReservationMode)
	}
	if obj.PlaceholderImage == nil {
		obj.PlaceholderImage = ptr.To(DefaultPlaceholderImage)
	}
	if obj.ReservationEvents == nil {
		obj.ReservationEvents = ptr.To(false)
	}
	if obj.PodInitialBackoffSeconds == nil {
		obj.PodInitialBackoffSeconds = ptr.To[int64](DefaultPodInitialBackoffSeconds)
	}
	if obj.PodMaxBackoffSeconds == nil {
		obj.PodMaxBackoffSeconds = ptr.To[int64](DefaultPodMaxBackoffSeconds)
	}
	if obj.ScoringStrategy == nil {
		obj.ScoringStrategy = &ScoringStrategy{}
	}
	if obj.ScoringStrategy.Type == "" {
		obj.ScoringStrategy.Type = LeastAllocated
	}
	if len(obj.ScoringStrategy.Resources) == 0 {
		obj.ScoringStrategy.Resources = []ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
	}
	for i := range obj.ScoringStrategy.Resources {
		if obj.ScoringStrategy.Resources[i].Weight == 0 {
			obj.ScoringStrategy.Resources[i].Weight = 1
		}
	}
}
