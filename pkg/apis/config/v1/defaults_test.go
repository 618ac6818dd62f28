package v1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := config.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func TestSetDefaults_WorkflowReservationArgs(t *testing.T) {
	customSelector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "runner"}}
	tests := map[string]struct {
		args *WorkflowReservationArgs
		want *WorkflowReservationArgs
	}{
		"empty": {
			args: &WorkflowReservationArgs{},
			want: &WorkflowReservationArgs{
				RunnerSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"actions-ephemeral-runner": "True"},
				},
				RunnerPodLabel:               ptr.To("runner-pod"),
				ScoringStrategy:              defaultScoring(),
				ReconcileInterval:            &metav1.Duration{Duration: time.Minute},
				StepRequestsFromHookTemplate: ptr.To(false),
				NoWorkflowPodGrace:           &metav1.Duration{Duration: 2 * time.Minute},
				PairPods:                     ptr.To(true),
				ReservationMode:              ptr.To("Memory"),
				PlaceholderImage:             ptr.To("pause:3.10"),
				ReservationEvents:            ptr.To(false),
				PodInitialBackoffSeconds:     ptr.To[int64](1),
				PodMaxBackoffSeconds:         ptr.To[int64](10),
			},
		},
		"set fields are kept": {
			args: &WorkflowReservationArgs{
				RunnerSelector:          customSelector,
				RunnerPodLabel:          ptr.To(""),
				DefaultWorkflowRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				ReconcileInterval:       &metav1.Duration{Duration: 5 * time.Minute},
				PairPods:                ptr.To(false),
				ReservationMode:         ptr.To("Pods"),
				PlaceholderImage:        ptr.To("example/pause:3.10"),
				ReservationEvents:       ptr.To(true),
			},
			want: &WorkflowReservationArgs{
				RunnerSelector:               customSelector,
				RunnerPodLabel:               ptr.To(""),
				DefaultWorkflowRequests:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				ScoringStrategy:              defaultScoring(),
				ReconcileInterval:            &metav1.Duration{Duration: 5 * time.Minute},
				StepRequestsFromHookTemplate: ptr.To(false),
				NoWorkflowPodGrace:           &metav1.Duration{Duration: 2 * time.Minute},
				PairPods:                     ptr.To(false),
				ReservationMode:              ptr.To("Pods"),
				PlaceholderImage:             ptr.To("example/pause:3.10"),
				ReservationEvents:            ptr.To(true),
				PodInitialBackoffSeconds:     ptr.To[int64](1),
				PodMaxBackoffSeconds:         ptr.To[int64](10),
			},
		},
	}
	scheme := newScheme(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			scheme.Default(tc.args)
			if diff := cmp.Diff(tc.want, tc.args); diff != "" {
				t.Errorf("unexpected defaults (-want,+got):\n%s", diff)
			}
		})
	}
}

// A backoff that is set is kept.
func TestSetDefaultsKeepsBackoff(t *testing.T) {
	args := &WorkflowReservationArgs{PodInitialBackoffSeconds: ptr.To[int64](2), PodMaxBackoffSeconds: ptr.To[int64](20)}
	newScheme(t).Default(args)
	if *args.PodInitialBackoffSeconds != 2 || *args.PodMaxBackoffSeconds != 20 {
		t.Errorf("backoff after defaulting = %d, %d; want 2, 20", *args.PodInitialBackoffSeconds, *args.PodMaxBackoffSeconds)
	}
}

func TestConvertWorkflowReservationArgs(t *testing.T) {
	tests := map[string]struct {
		in   *WorkflowReservationArgs
		want *config.WorkflowReservationArgs
	}{
		"all fields": {
			in: &WorkflowReservationArgs{
				RunnerSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "runner"}},
				RunnerPodLabel: ptr.To("example.com/runner"),
				DefaultWorkflowRequests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("1"),
					corev1.ResourceMemory: resource.MustParse("2Gi"),
				},
				DefaultStepRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			},
			want: &config.WorkflowReservationArgs{
				RunnerSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "runner"}},
				RunnerPodLabel: "example.com/runner",
				DefaultWorkflowRequests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("1"),
					corev1.ResourceMemory: resource.MustParse("2Gi"),
				},
				DefaultStepRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			},
		},
		"unset fields": {
			in:   &WorkflowReservationArgs{},
			want: &config.WorkflowReservationArgs{},
		},
	}
	scheme := newScheme(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := &config.WorkflowReservationArgs{}
			if err := scheme.Convert(tc.in, got, nil); err != nil {
				t.Fatalf("Convert() to internal: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected internal args (-want,+got):\n%s", diff)
			}

			back := &WorkflowReservationArgs{}
			if err := scheme.Convert(got, back, nil); err != nil {
				t.Fatalf("Convert() to v1: %v", err)
			}
			roundTripped := &config.WorkflowReservationArgs{}
			if err := scheme.Convert(back, roundTripped, nil); err != nil {
				t.Fatalf("Convert() back to internal: %v", err)
			}
			if diff := cmp.Diff(tc.want, roundTripped); diff != "" {
				t.Errorf("round trip changed args (-want,+got):\n%s", diff)
			}
		})
	}
}

func defaultScoring() *ScoringStrategy {
	return &ScoringStrategy{
		Type:      LeastAllocated,
		Resources: []ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}},
	}
}
