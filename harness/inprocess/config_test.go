package inprocess

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	configv1 "github.com/tandem-scheduler/tandem/pkg/apis/config/v1"
)

func load(t *testing.T, file string) *schedconfig.KubeSchedulerConfiguration {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, file)
	if err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	return cfg
}

// The in-process tandem profile, which the simulator and the integration
// tests run, is the shipped one but for the differences Config documents.
func TestConfigMatchesShipped(t *testing.T) {
	shipped := load(t, filepath.Join("..", "..", "manifests", "scheduler-config.yaml"))
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(Config(Profile{SchedulerName: "tandem-scheduler", Tandem: true, Scoring: "MostAllocated"})), 0o600); err != nil {
		t.Fatal(err)
	}
	ours := load(t, file)

	// The documented differences.
	if ours.LeaderElection.LeaderElect {
		t.Errorf("in-process config elects a leader")
	}
	ours.LeaderElection = shipped.LeaderElection
	for _, p := range shipped.Profiles {
		for _, pc := range p.PluginConfig {
			if args, ok := pc.Args.(*config.WorkflowReservationArgs); ok {
				args.DefaultWorkflowRequests, args.DefaultStepRequests = nil, nil
				args.RunnerNamespaces, args.HookTemplateNamespaces = nil, nil
				args.PlaceholderImage = configv1.DefaultPlaceholderImage
			}
		}
	}
	if diff := cmp.Diff(shipped, ours); diff != "" {
		t.Errorf("in-process config differs from manifests/scheduler-config.yaml beyond the documented differences (-shipped,+in-process):\n%s", diff)
	}
}

// With LeaderElection the config elects a leader on the given Lease with the
// given timings, and is otherwise the same as without it.
func TestConfigLeaderElection(t *testing.T) {
	le := &LeaderElection{ResourceName: "tandem-chaos", ResourceNamespace: "kube-system",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}
	tests := map[string]struct {
		le   *LeaderElection
		want componentbaseconfig.LeaderElectionConfiguration
	}{
		"off": {},
		"on, short lease": {
			le: le,
			want: componentbaseconfig.LeaderElectionConfiguration{
				LeaderElect: true, ResourceLock: "leases", ResourceName: "tandem-chaos", ResourceNamespace: "kube-system",
				LeaseDuration: metav1.Duration{Duration: 4 * time.Second}, RenewDeadline: metav1.Duration{Duration: 3 * time.Second},
				RetryPeriod: metav1.Duration{Duration: time.Second},
			},
		},
		"on, default timings": {
			le: &LeaderElection{ResourceName: "tandem-scheduler", ResourceNamespace: "kube-system"},
			want: componentbaseconfig.LeaderElectionConfiguration{
				LeaderElect: true, ResourceLock: "leases", ResourceName: "tandem-scheduler", ResourceNamespace: "kube-system",
				LeaseDuration: metav1.Duration{Duration: 15 * time.Second}, RenewDeadline: metav1.Duration{Duration: 10 * time.Second},
				RetryPeriod: metav1.Duration{Duration: 2 * time.Second},
			},
		},
	}
	without := loadString(t, Config(Profile{SchedulerName: "tandem-scheduler", Tandem: true}))
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := loadString(t, Config(Profile{SchedulerName: "tandem-scheduler", Tandem: true, LeaderElection: tc.le}))
			if tc.le == nil {
				if got.LeaderElection.LeaderElect {
					t.Errorf("leader election on without LeaderElection")
				}
				return
			}
			if diff := cmp.Diff(tc.want, got.LeaderElection); diff != "" {
				t.Errorf("leaderElection (-want,+got):\n%s", diff)
			}
			got.LeaderElection = without.LeaderElection
			if diff := cmp.Diff(without, got); diff != "" {
				t.Errorf("config differs beyond leaderElection (-without,+with):\n%s", diff)
			}
		})
	}
}

func loadString(t *testing.T, config string) *schedconfig.KubeSchedulerConfiguration {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return load(t, file)
}

// A VolumeBinding replacement takes the in-tree plugin's place at every
// extension point of both the default and the tandem profile, and changes
// nothing else (but VolumeBinding's default args, of a plugin not run).
func TestConfigVolumeBinding(t *testing.T) {
	for name, p := range map[string]Profile{
		"default": {SchedulerName: "default-scheduler"},
		"tandem":  {SchedulerName: "tandem-scheduler", Tandem: true},
	} {
		t.Run(name, func(t *testing.T) {
			without := loadString(t, Config(p))
			p.VolumeBinding = "SimVolumeBinding"
			got := loadString(t, Config(p))
			mp := got.Profiles[0].Plugins.MultiPoint
			if !hasPlugin(mp.Enabled, "SimVolumeBinding") || !hasPlugin(mp.Disabled, "VolumeBinding") {
				t.Fatalf("multiPoint enabled %v, disabled %v: want SimVolumeBinding enabled, VolumeBinding disabled", mp.Enabled, mp.Disabled)
			}
			for _, set := range []schedconfig.PluginSet{got.Profiles[0].Plugins.PreFilter, got.Profiles[0].Plugins.Filter, got.Profiles[0].Plugins.PreBind} {
				if hasPlugin(set.Enabled, "VolumeBinding") {
					t.Errorf("VolumeBinding still enabled: %v", set.Enabled)
				}
			}
			got.Profiles[0].Plugins.MultiPoint, without.Profiles[0].Plugins.MultiPoint = schedconfig.PluginSet{}, schedconfig.PluginSet{}
			// A disabled plugin gets no default args.
			without.Profiles[0].PluginConfig = slices.DeleteFunc(without.Profiles[0].PluginConfig, func(c schedconfig.PluginConfig) bool {
				return c.Name == "VolumeBinding"
			})
			if diff := cmp.Diff(without, got); diff != "" {
				t.Errorf("config differs beyond multiPoint (-without,+with):\n%s", diff)
			}
		})
	}
}

func hasPlugin(plugins []schedconfig.Plugin, name string) bool {
	for _, p := range plugins {
		if p.Name == name {
			return true
		}
	}
	return false
}
