package upstream

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	configtesting "k8s.io/kubernetes/pkg/scheduler/apis/config/testing"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
)

const shipped = "../../manifests/scheduler-config.yaml"

// TestTandemizeTheDefaultProfileGivesTheShippedOne: kube-scheduler's default
// profile, tandemized, has the shipped profile's plugins and args, but for
// the scoring strategy, which stays the default profile's.
func TestTandemizeTheDefaultProfileGivesTheShippedOne(t *testing.T) {
	args, err := ShippedArgs(shipped)
	if err != nil {
		t.Fatal(err)
	}
	want := shippedProfile(t)

	def := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{})
	got, skipped := Tandemize(def.Profiles, args)
	if len(skipped) != 0 {
		t.Fatalf("the default profile was left alone: %v", skipped)
	}
	if len(got) != 1 {
		t.Fatalf("got %d profiles, want 1", len(got))
	}
	if diff := cmp.Diff(want.Plugins, got[0].Plugins); diff != "" {
		t.Errorf("plugins differ from the shipped profile's (-shipped +tandemized):\n%s", diff)
	}
	gotArgs := pluginArgs(t, got[0])
	if gotArgs.ScoringStrategy == nil || gotArgs.ScoringStrategy.Type != config.LeastAllocated {
		t.Errorf("scoring strategy %+v, want the default profile's LeastAllocated", gotArgs.ScoringStrategy)
	}
	wantArgs := args.DeepCopy()
	wantArgs.ScoringStrategy = gotArgs.ScoringStrategy
	if diff := cmp.Diff(wantArgs, gotArgs); diff != "" {
		t.Errorf("args differ from the shipped ones (-shipped +tandemized):\n%s", diff)
	}
	if n := len(def.Profiles[0].Plugins.Filter.Disabled); n != 0 {
		t.Errorf("Tandemize changed its input: %d filter plugins disabled", n)
	}
}

// TestTandemizeKeepsEachProfilesScoring: the profile's NodeResourcesFit
// scoring becomes WorkflowReservation's, and a profile whose scoring it
// cannot express is left alone, not tandemized with LeastAllocated.
func TestTandemizeKeepsEachProfilesScoring(t *testing.T) {
	args, err := ShippedArgs(shipped)
	if err != nil {
		t.Fatal(err)
	}
	most := configv1.MostAllocated
	cfg := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{
		Profiles: []configv1.KubeSchedulerProfile{{
			PluginConfig: []configv1.PluginConfig{{
				Name: names.NodeResourcesFit,
				Args: runtimeObject(&configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
					Type:      most,
					Resources: []configv1.ResourceSpec{{Name: "cpu", Weight: 3}},
				}}),
			}},
		}},
	})
	got, skipped := Tandemize(cfg.Profiles, args)
	if len(skipped) != 0 {
		t.Fatalf("left alone: %v", skipped)
	}
	want := &config.ScoringStrategy{Type: config.MostAllocated, Resources: []config.ResourceSpec{{Name: "cpu", Weight: 3}}}
	if diff := cmp.Diff(want, pluginArgs(t, got[0]).ScoringStrategy); diff != "" {
		t.Errorf("scoring (-want +got):\n%s", diff)
	}

	ratio := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{
		Profiles: []configv1.KubeSchedulerProfile{{
			PluginConfig: []configv1.PluginConfig{{
				Name: names.NodeResourcesFit,
				Args: runtimeObject(&configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
					Type: configv1.RequestedToCapacityRatio,
					RequestedToCapacityRatio: &configv1.RequestedToCapacityRatioParam{
						Shape: []configv1.UtilizationShapePoint{{Utilization: 0, Score: 0}, {Utilization: 100, Score: 10}},
					},
				}}),
			}},
		}},
	})
	assertLeftAlone(t, ratio.Profiles, args, "RequestedToCapacityRatio")
}

// TestTandemizeLeavesAloneWhatItCannotBe: a profile without a
// NodeResourcesFit filter, or whose NodeResourcesFit ignores resources,
// comes back as it was, with the reason.
func TestTandemizeLeavesAloneWhatItCannotBe(t *testing.T) {
	for name, tc := range map[string]struct {
		profile configv1.KubeSchedulerProfile
		why     string
	}{
		"every multiPoint plugin disabled": {
			profile: configv1.KubeSchedulerProfile{Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{
				Disabled: []configv1.Plugin{{Name: "*"}},
				Enabled:  []configv1.Plugin{{Name: names.PrioritySort}, {Name: names.DefaultBinder}},
			}}},
			why: "no NodeResourcesFit filter",
		},
		"fit disabled at filter": {
			profile: configv1.KubeSchedulerProfile{Plugins: &configv1.Plugins{Filter: configv1.PluginSet{
				Disabled: []configv1.Plugin{{Name: names.NodeResourcesFit}},
			}}},
			why: "no NodeResourcesFit filter",
		},
		"ignored resources": {
			profile: configv1.KubeSchedulerProfile{PluginConfig: []configv1.PluginConfig{{
				Name: names.NodeResourcesFit,
				Args: runtimeObject(&configv1.NodeResourcesFitArgs{IgnoredResources: []string{"example.com/foo"}}),
			}}},
			why: "ignores resources",
		},
		"ignored resource groups": {
			profile: configv1.KubeSchedulerProfile{PluginConfig: []configv1.PluginConfig{{
				Name: names.NodeResourcesFit,
				Args: runtimeObject(&configv1.NodeResourcesFitArgs{IgnoredResourceGroups: []string{"example.com"}}),
			}}},
			why: "ignores resources",
		},
	} {
		t.Run(name, func(t *testing.T) {
			args, err := ShippedArgs(shipped)
			if err != nil {
				t.Fatal(err)
			}
			cfg := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{Profiles: []configv1.KubeSchedulerProfile{tc.profile}})
			assertLeftAlone(t, cfg.Profiles, args, tc.why)
		})
	}

	// Fit enabled again at filter after every multiPoint plugin is
	// disabled: tandemized.
	args, err := ShippedArgs(shipped)
	if err != nil {
		t.Fatal(err)
	}
	cfg := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{Profiles: []configv1.KubeSchedulerProfile{{
		Plugins: &configv1.Plugins{
			MultiPoint: configv1.PluginSet{Disabled: []configv1.Plugin{{Name: "*"}}, Enabled: []configv1.Plugin{{Name: names.PrioritySort}, {Name: names.DefaultBinder}}},
			Filter:     configv1.PluginSet{Enabled: []configv1.Plugin{{Name: names.NodeResourcesFit}}},
		},
	}}})
	if _, skipped := Tandemize(cfg.Profiles, args); len(skipped) != 0 {
		t.Errorf("a profile that enables NodeResourcesFit at filter was left alone: %v", skipped)
	}
}

func assertLeftAlone(t *testing.T, profiles []schedulerapi.KubeSchedulerProfile, args *config.WorkflowReservationArgs, why string) {
	t.Helper()
	got, skipped := Tandemize(profiles, args)
	if !strings.Contains(skipped[0], why) {
		t.Errorf("reason %q, want one that says %q", skipped[0], why)
	}
	if diff := cmp.Diff(profiles, got); diff != "" {
		t.Errorf("a profile left alone changed (-was +is):\n%s", diff)
	}
}

func shippedProfile(t *testing.T) schedulerapi.KubeSchedulerProfile {
	t.Helper()
	cfg, err := load(shipped)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.Profiles {
		for _, pc := range p.PluginConfig {
			if pc.Name == workflowreservation.Name {
				return p
			}
		}
	}
	t.Fatalf("%s has no profile with %s", shipped, workflowreservation.Name)
	return schedulerapi.KubeSchedulerProfile{}
}

func pluginArgs(t *testing.T, p schedulerapi.KubeSchedulerProfile) *config.WorkflowReservationArgs {
	t.Helper()
	var found *config.WorkflowReservationArgs
	for _, pc := range p.PluginConfig {
		if pc.Name != workflowreservation.Name {
			continue
		}
		if found != nil {
			t.Fatalf("profile %q configures %s twice", p.SchedulerName, pc.Name)
		}
		a, ok := pc.Args.(*config.WorkflowReservationArgs)
		if !ok {
			t.Fatalf("args are a %T", pc.Args)
		}
		found = a
	}
	if found == nil {
		t.Fatalf("profile %q does not configure %s", p.SchedulerName, workflowreservation.Name)
	}
	return found
}

func runtimeObject(o runtime.Object) runtime.RawExtension {
	return runtime.RawExtension{Object: o}
}
