package validation

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	configv1 "github.com/tandem-scheduler/tandem/pkg/apis/config/v1"
)

// validArgs are the args as defaulting leaves them.
func validArgs() *config.WorkflowReservationArgs {
	in := &configv1.WorkflowReservationArgs{}
	configv1.SetObjectDefaults_WorkflowReservationArgs(in)
	out := &config.WorkflowReservationArgs{}
	if err := configv1.Convert_v1_WorkflowReservationArgs_To_config_WorkflowReservationArgs(in, out, nil); err != nil {
		panic(err)
	}
	return out
}

func TestValidateWorkflowReservationArgs(t *testing.T) {
	tests := map[string]struct {
		modify   func(*config.WorkflowReservationArgs)
		wantErrs field.ErrorList
	}{
		"default args": {
			modify: func(*config.WorkflowReservationArgs) {},
		},
		"all args set": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.RunnerSelector = &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "app", Operator: metav1.LabelSelectorOpExists},
					},
				}
				args.RunnerPodLabel = "example.com/runner-pod"
				args.DefaultWorkflowRequests = v1.ResourceList{
					v1.ResourceCPU:              resource.MustParse("1"),
					v1.ResourceMemory:           resource.MustParse("2Gi"),
					v1.ResourceEphemeralStorage: resource.MustParse("0"),
					"hugepages-2Mi":             resource.MustParse("4Mi"),
					"example.com/gpu":           resource.MustParse("1"),
				}
				args.DefaultStepRequests = v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("500m"),
				}
			},
		},
		"reconcile interval below a second": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.ReconcileInterval = metav1.Duration{Duration: 500 * time.Millisecond}
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "reconcileInterval"), "500ms", ""),
			},
		},
		"reservation mode": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.ReservationMode = "Placeholders"
			},
			wantErrs: field.ErrorList{
				field.NotSupported(field.NewPath("args", "reservationMode"), "Placeholders", []string{"Memory", "Pods"}),
			},
		},
		"host ports": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.DefaultHostPorts = []string{"6379", "53/udp", "0", "6379/TCP", "80/HTTP"}
				args.NoWorkflowPodGrace = metav1.Duration{Duration: -time.Second}
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "noWorkflowPodGrace"), "-1s", ""),
				field.Invalid(field.NewPath("args", "defaultHostPorts").Index(2), "0", ""),
				field.Duplicate(field.NewPath("args", "defaultHostPorts").Index(3), "6379/TCP"),
				field.Invalid(field.NewPath("args", "defaultHostPorts").Index(4), "80/HTTP", ""),
			},
		},
		"too many host ports": {
			modify: func(args *config.WorkflowReservationArgs) {
				for p := range 17 {
					args.DefaultHostPorts = append(args.DefaultHostPorts, strconv.Itoa(8000+p))
				}
			},
			wantErrs: field.ErrorList{field.TooMany(field.NewPath("args", "defaultHostPorts"), 17, 16)},
		},
		"backoff": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.PodInitialBackoffSeconds = 5
				args.PodMaxBackoffSeconds = 2
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "podMaxBackoffSeconds"), int64(2), ""),
			},
		},
		// The plugin takes what defaulting set: args that skipped it are
		// refused rather than defaulted a second time.
		"not defaulted": {
			modify: func(args *config.WorkflowReservationArgs) {
				*args = config.WorkflowReservationArgs{RunnerSelector: args.RunnerSelector, RunnerPodLabel: args.RunnerPodLabel}
			},
			wantErrs: field.ErrorList{
				field.Required(field.NewPath("args", "scoringStrategy"), ""),
				field.Invalid(field.NewPath("args", "reconcileInterval"), "0s", ""),
				field.Invalid(field.NewPath("args", "podInitialBackoffSeconds"), int64(0), ""),
				field.Invalid(field.NewPath("args", "noWorkflowPodGrace"), "0s", ""),
				field.Required(field.NewPath("args", "placeholderImage"), ""),
				field.NotSupported(field.NewPath("args", "reservationMode"), "", []string{config.ReservationModeMemory, config.ReservationModePods}),
			},
		},
		"negative backoff": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.PodInitialBackoffSeconds = -1
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "podInitialBackoffSeconds"), int64(-1), ""),
			},
		},
		"hook template namespaces": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.HookTemplateNamespaces = []string{"arc-runners", "Arc_Runners", "arc-runners"}
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "hookTemplateNamespaces").Index(1), "Arc_Runners", ""),
				field.Duplicate(field.NewPath("args", "hookTemplateNamespaces").Index(2), "arc-runners"),
			},
		},
		"maximum below the defaults": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.DefaultWorkflowRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
				args.DefaultStepRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}
				args.MaxWorkflowRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("0")}
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "maxWorkflowRequests").Key("cpu"), "1", ""),
				field.Invalid(field.NewPath("args", "maxWorkflowRequests").Key("memory"), "0", ""),
			},
		},
		"runner namespaces": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.RunnerNamespaces = []string{"team-a", "team-a", "-x"}
			},
			wantErrs: field.ErrorList{
				field.Duplicate(field.NewPath("args", "runnerNamespaces").Index(1), "team-a"),
				field.Invalid(field.NewPath("args", "runnerNamespaces").Index(2), "-x", ""),
			},
		},
		"nil selector": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.RunnerSelector = nil
			},
			wantErrs: field.ErrorList{
				field.Required(field.NewPath("args", "runnerSelector"), ""),
			},
		},
		"bad selector": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.RunnerSelector = &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "app", Operator: metav1.LabelSelectorOpIn},
					},
				}
			},
			wantErrs: field.ErrorList{
				field.Required(field.NewPath("args", "runnerSelector", "matchExpressions").Index(0).Child("values"), ""),
			},
		},
		"bad selector label value": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.RunnerSelector.MatchLabels = map[string]string{"actions-ephemeral-runner": "not valid"}
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "runnerSelector", "matchLabels"), "not valid", ""),
			},
		},
		"empty label key": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.RunnerPodLabel = ""
			},
			wantErrs: field.ErrorList{
				field.Required(field.NewPath("args", "runnerPodLabel"), ""),
			},
		},
		"bad label key": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.RunnerPodLabel = "runner pod"
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "runnerPodLabel"), "runner pod", ""),
			},
		},
		"negative quantities": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.DefaultWorkflowRequests = v1.ResourceList{
					v1.ResourceCPU:    resource.MustParse("1"),
					v1.ResourceMemory: resource.MustParse("-1Gi"),
				}
				args.DefaultStepRequests = v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("-100m"),
				}
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "defaultWorkflowRequests").Key("memory"), "-1Gi", ""),
				field.Invalid(field.NewPath("args", "defaultStepRequests").Key("cpu"), "-100m", ""),
			},
		},
		"bad resource names": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.DefaultWorkflowRequests = v1.ResourceList{
					"gpu":          resource.MustParse("1"),
					"bad name":     resource.MustParse("1"),
					"requests.a/b": resource.MustParse("1"),
				}
			},
			wantErrs: field.ErrorList{
				field.Invalid(field.NewPath("args", "defaultWorkflowRequests").Key("bad name"), v1.ResourceName("bad name"), ""),
				field.Invalid(field.NewPath("args", "defaultWorkflowRequests").Key("gpu"), v1.ResourceName("gpu"), ""),
				field.Invalid(field.NewPath("args", "defaultWorkflowRequests").Key("requests.a/b"), v1.ResourceName("requests.a/b"), ""),
			},
		},
		"bad scoring strategy": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.ScoringStrategy = &config.ScoringStrategy{
					Type: "Spread",
					Resources: []config.ResourceSpec{
						{Name: "cpu", Weight: 1},
						{Name: "cpu", Weight: 101},
					},
				}
			},
			wantErrs: field.ErrorList{
				field.NotSupported[string](field.NewPath("args", "scoringStrategy", "type"), config.ScoringStrategyType("Spread"), nil),
				field.Duplicate(field.NewPath("args", "scoringStrategy", "resources").Index(1).Child("name"), "cpu"),
				field.Invalid(field.NewPath("args", "scoringStrategy", "resources").Index(1).Child("weight"), int64(101), ""),
			},
		},
		"scoring strategy without resources": {
			modify: func(args *config.WorkflowReservationArgs) {
				args.ScoringStrategy = &config.ScoringStrategy{Type: config.MostAllocated}
			},
			wantErrs: field.ErrorList{
				field.Required(field.NewPath("args", "scoringStrategy", "resources"), ""),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args := validArgs()
			tc.modify(args)
			err := ValidateWorkflowReservationArgs(field.NewPath("args"), args)
			var gotErrs field.ErrorList
			if err != nil {
				var agg utilerrors.Aggregate
				if !errors.As(err, &agg) {
					t.Fatalf("got error of type %T, want an aggregate: %v", err, err)
				}
				for _, e := range agg.Errors() {
					var fe *field.Error
					if !errors.As(e, &fe) {
						t.Fatalf("got error of type %T in the aggregate, want *field.Error: %v", e, e)
					}
					gotErrs = append(gotErrs, fe)
				}
			}
			if diff := cmp.Diff(tc.wantErrs, gotErrs, cmpopts.IgnoreFields(field.Error{}, "Detail", "Origin", "CoveredByDeclarative")); diff != "" {
				t.Errorf("unexpected errors (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWarningsForWorkflowReservationArgs(t *testing.T) {
	for image, warn := range map[string]bool{
		"pause:3.10":                            true,
		"team/pause:3.10":                       true,
		"registry.example/team/tandem-pause:v1": false,
		"mirror:5000/pause:3.10":                false,
		"localhost/pause:3.10":                  false,
		"registry.example/pause@sha256:0123":    false,
	} {
		args := validArgs()
		args.PlaceholderImage = image
		got := WarningsForWorkflowReservationArgs(args)
		if (len(got) > 0) != warn {
			t.Errorf("placeholderImage %q: warnings %q, want a warning %v", image, got, warn)
		}
	}
}
