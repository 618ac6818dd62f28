package inprocess

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
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
	if err := os.WriteFile(file, []byte(Config(Profile{SchedulerName: "tandem-scheduler", Tandem: true})), 0o600); err != nil {
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
			}
		}
	}
	if diff := cmp.Diff(shipped, ours); diff != "" {
		t.Errorf("in-process config differs from manifests/scheduler-config.yaml beyond the documented differences (-shipped,+in-process):\n%s", diff)
	}
}
