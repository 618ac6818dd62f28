// Package upstream gives kube-scheduler's own integration tests tandem's
// plugin, so that a suite written for vanilla kube-scheduler runs unchanged
// under tandem's profile (hack/upstream-tests.sh). A profile gets what the
// shipped configuration (manifests/scheduler-config.yaml) gives the default
// one for the plugin: WorkflowReservation enabled, at bind too (it binds only
// runners and skips every other pod); NodeResourcesFit disabled at
// preFilter, filter, preScore and score, because WorkflowReservation runs its
// filter and scores in its place; and the shipped WorkflowReservation args,
// with the profile's own NodeResourcesFit scoring strategy, so that a test
// that ranks nodes ranks them as it expects. The shipped PodTopologySpread
// args (no default constraints) are not applied: they are not the plugin's.
//
// A profile is left alone, and says so, where tandem's profile could not be
// the same as it: one that runs no NodeResourcesFit filter, and one whose
// NodeResourcesFit args ignore resources or score in a way WorkflowReservation
// cannot (its filter runs NodeResourcesFit with the default args). Resources
// an extender marks ignoredByScheduler, which kube-scheduler adds to those
// args after this runs, are not ignored on the tandem side.
//
// Each profile builds its own plugin with workflowreservation.New, which
// starts the controllers that tandem-scheduler's binary runs once for all
// its profiles (NewFactory).
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
// strategy is the profile's NodeResourcesFit one; a profile it leaves alone
// is returned as it is, with the reason in skipped (by profile index).
func Tandemize(profiles []schedulerapi.KubeSchedulerProfile, args *config.WorkflowReservationArgs) (out []schedulerapi.KubeSchedulerProfile, skipped map[int]string) {
	skipped = map[int]string{}
	for i := range profiles {
		p := profiles[i].DeepCopy()
		a := args.DeepCopy()
		if why := fitOf(p, a); why != "" {
			skipped[i] = why
			out = append(out, *p)
			continue
		}
		if p.Plugins == nil {
			p.Plugins = &schedulerapi.Plugins{}
		}
		enable(&p.Plugins.MultiPoint, workflowreservation.Name)
		// As shipped; it skips every pod that is not a runner.
		enable(&p.Plugins.Bind, workflowreservation.Name)
		for _, set := range []*schedulerapi.PluginSet{&p.Plugins.PreFilter, &p.Plugins.Filter, &p.Plugins.PreScore, &p.Plugins.Score} {
			disable(set, names.NodeResourcesFit)
		}
		p.PluginConfig = slices.DeleteFunc(p.PluginConfig, func(pc schedulerapi.PluginConfig) bool { return pc.Name == workflowreservation.Name })
		p.PluginConfig = append(p.PluginConfig, schedulerapi.PluginConfig{Name: workflowreservation.Name, Args: a})
		out = append(out, *p)
	}
	return out, skipped
}

// fitOf sets a's scoring strategy to p's NodeResourcesFit one and returns
// why p cannot be tandemized, if it cannot.
func fitOf(p *schedulerapi.KubeSchedulerProfile, a *config.WorkflowReservationArgs) string {
	if !runsFitFilter(p.Plugins) {
		return "it runs no " + names.NodeResourcesFit + " filter"
	}
	for _, pc := range p.PluginConfig {
		fit, ok := pc.Args.(*schedulerapi.NodeResourcesFitArgs)
		if pc.Name != names.NodeResourcesFit || !ok {
			continue
		}
		if len(fit.IgnoredResources) != 0 || len(fit.IgnoredResourceGroups) != 0 {
			return "its " + names.NodeResourcesFit + " ignores resources"
		}
		if fit.ScoringStrategy == nil {
			continue
		}
		s, err := scoring(fit.ScoringStrategy)
		if err != nil {
			return err.Error()
		}
		a.ScoringStrategy = s
	}
	return ""
}

// runsFitFilter reports whether plugins run NodeResourcesFit at filter, as
// the framework expands them: enabled there, or at multiPoint and disabled
// at neither.
func runsFitFilter(plugins *schedulerapi.Plugins) bool {
	if plugins == nil {
		return true // the default plugins
	}
	if has(plugins.Filter.Disabled, names.NodeResourcesFit) || has(plugins.Filter.Disabled, "*") {
		return has(plugins.Filter.Enabled, names.NodeResourcesFit)
	}
	if has(plugins.Filter.Enabled, names.NodeResourcesFit) {
		return true
	}
	return has(plugins.MultiPoint.Enabled, names.NodeResourcesFit) &&
		!has(plugins.MultiPoint.Disabled, names.NodeResourcesFit) && !has(plugins.MultiPoint.Disabled, "*")
}

func has(list []schedulerapi.Plugin, name string) bool {
	return slices.ContainsFunc(list, func(p schedulerapi.Plugin) bool { return p.Name == name })
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
	if !has(set.Enabled, name) {
		set.Enabled = append(set.Enabled, schedulerapi.Plugin{Name: name})
	}
}

func disable(set *schedulerapi.PluginSet, name string) {
	if !has(set.Disabled, name) {
		set.Disabled = append(set.Disabled, schedulerapi.Plugin{Name: name})
	}
}

// Transform is what hack/upstream-tests.sh puts in front of every
// scheduler an upstream test builds: the shipped args read from the file
// ConfigEnv names, and a function that tandemizes the profiles the test
// configured (or kube-scheduler's default one) and says on stderr which it
// changed and which it left alone; the script counts those lines.
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
		out, skipped := Tandemize(profiles, args)
		for i, p := range out {
			if why, ok := skipped[i]; ok {
				fmt.Fprintf(os.Stderr, "tandem-upstream-skipped: %s profile %q left alone: %s\n", t.Name(), p.SchedulerName, why)
				continue
			}
			fmt.Fprintf(os.Stderr, "tandem-upstream: %s profile %q runs %s\n", t.Name(), p.SchedulerName, workflowreservation.Name)
		}
		return out
	}
}
