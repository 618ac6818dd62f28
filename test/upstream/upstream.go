// Package upstream gives kube-scheduler's own integration tests tandem's
// plugin as shipped, in every profile they build, so that a suite written
// for vanilla kube-scheduler runs unchanged under tandem's profile
// (hack/upstream-tests.sh). It changes a profile exactly as the shipped
// configuration (manifests/scheduler-config.yaml) changes the default one:
// WorkflowReservation enabled, at bind too (it binds only runners and skips
// every other pod), NodeResourcesFit disabled at preFilter, filter, preScore and score
// because WorkflowReservation runs its filter and scores in its place, and
// the shipped WorkflowReservation args. Its scoring strategy is the
// profile's own NodeResourcesFit one, so a test that ranks nodes ranks them
// as it expects.
package upstream

import (
	"fmt"
	"os"
	"slices"
	"testing"

	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	// Registers the plugin's args with kube-scheduler's config scheme, so
	// that the shipped file's args decode into config.WorkflowReservationArgs.
	_ "github.com/tandem-scheduler/tandem/pkg/apis/config/scheme"
	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
)

// ConfigEnv names the environment variable that holds the path of the
// shipped scheduler configuration whose WorkflowReservation args every
// profile gets.
const ConfigEnv = "TANDEM_SCHEDULER_CONFIG"

// Registry is the out-of-tree registry that holds tandem's plugin.
func Registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{workflowreservation.Name: workflowreservation.New}
}

// ShippedArgs reads the WorkflowReservation args of the first profile of
// the scheduler configuration at path that configures them, decoded and
// defaulted as kube-scheduler decodes them.
func ShippedArgs(path string) (*config.WorkflowReservationArgs, error) {
	cfg, err := load(path)
	if err != nil {
		return nil, err
	}
	for _, p := range cfg.Profiles {
		for _, pc := range p.PluginConfig {
			if pc.Name != workflowreservation.Name {
				continue
			}
			args, ok := pc.Args.(*config.WorkflowReservationArgs)
			if !ok {
				return nil, fmt.Errorf("%s: %s args decode to %T", path, pc.Name, pc.Args)
			}
			return args, nil
		}
	}
	return nil, fmt.Errorf("%s configures no %s", path, workflowreservation.Name)
}

// load decodes and defaults the scheduler configuration at path.
func load(path string) (*schedulerapi.KubeSchedulerConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj, _, err := kubeschedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	cfg, ok := obj.(*schedulerapi.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s holds a %T, not a KubeSchedulerConfiguration", path, obj)
	}
	return cfg, nil
}

// Tandemize returns copies of profiles with tandem's plugin added as the
// shipped configuration adds it, each with a copy of args whose scoring
// strategy is the profile's NodeResourcesFit one.
func Tandemize(profiles []schedulerapi.KubeSchedulerProfile, args *config.WorkflowReservationArgs) ([]schedulerapi.KubeSchedulerProfile, error) {
	out := make([]schedulerapi.KubeSchedulerProfile, 0, len(profiles))
	for i := range profiles {
		p := profiles[i].DeepCopy()
		if p.Plugins == nil {
			p.Plugins = &schedulerapi.Plugins{}
		}
		enable(&p.Plugins.MultiPoint, workflowreservation.Name)
		// Before the profile's binders, as shipped; it skips every pod
		// that is not a runner.
		enable(&p.Plugins.Bind, workflowreservation.Name)
		for _, set := range []*schedulerapi.PluginSet{&p.Plugins.PreFilter, &p.Plugins.Filter, &p.Plugins.PreScore, &p.Plugins.Score} {
			disable(set, names.NodeResourcesFit)
		}
		a := args.DeepCopy()
		for _, pc := range p.PluginConfig {
			fit, ok := pc.Args.(*schedulerapi.NodeResourcesFitArgs)
			if pc.Name != names.NodeResourcesFit || !ok || fit.ScoringStrategy == nil {
				continue
			}
			s, err := scoring(fit.ScoringStrategy)
			if err != nil {
				return nil, fmt.Errorf("profile %q: %w", p.SchedulerName, err)
			}
			a.ScoringStrategy = s
		}
		p.PluginConfig = slices.DeleteFunc(p.PluginConfig, func(pc schedulerapi.PluginConfig) bool { return pc.Name == workflowreservation.Name })
		p.PluginConfig = append(p.PluginConfig, schedulerapi.PluginConfig{Name: workflowreservation.Name, Args: a})
		out = append(out, *p)
	}
	return out, nil
}

// scoring is tandem's equivalent of a NodeResourcesFit scoring strategy.
func scoring(s *schedulerapi.ScoringStrategy) (*config.ScoringStrategy, error) {
	out := &config.ScoringStrategy{}
	switch s.Type {
	case schedulerapi.LeastAllocated:
		out.Type = config.LeastAllocated
	case schedulerapi.MostAllocated:
		out.Type = config.MostAllocated
	default:
		return nil, fmt.Errorf("NodeResourcesFit scoring strategy %q has no WorkflowReservation equivalent", s.Type)
	}
	for _, r := range s.Resources {
		out.Resources = append(out.Resources, config.ResourceSpec{Name: r.Name, Weight: r.Weight})
	}
	return out, nil
}

func enable(set *schedulerapi.PluginSet, name string) {
	if !slices.ContainsFunc(set.Enabled, func(p schedulerapi.Plugin) bool { return p.Name == name }) {
		set.Enabled = append(set.Enabled, schedulerapi.Plugin{Name: name})
	}
}

func disable(set *schedulerapi.PluginSet, name string) {
	if !slices.ContainsFunc(set.Disabled, func(p schedulerapi.Plugin) bool { return p.Name == name }) {
		set.Disabled = append(set.Disabled, schedulerapi.Plugin{Name: name})
	}
}

// Transform is what hack/upstream-tests.sh puts in front of every
// scheduler an upstream test builds: the shipped args read from the file
// ConfigEnv names, and a function that tandemizes the profiles the test
// configured (or kube-scheduler's default one) and says so on stderr, which
// the script counts to prove the plugin ran.
func Transform(t testing.TB) func([]schedulerapi.KubeSchedulerProfile) []schedulerapi.KubeSchedulerProfile {
	t.Helper()
	path := os.Getenv(ConfigEnv)
	if path == "" {
		t.Fatalf("%s is not set: the path of the shipped scheduler configuration", ConfigEnv)
	}
	args, err := ShippedArgs(path)
	if err != nil {
		t.Fatal(err)
	}
	return func(profiles []schedulerapi.KubeSchedulerProfile) []schedulerapi.KubeSchedulerProfile {
		out, err := Tandemize(profiles, args)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range out {
			fmt.Fprintf(os.Stderr, "tandem-upstream: %s profile %q runs %s\n", t.Name(), p.SchedulerName, workflowreservation.Name)
		}
		return out
	}
}
