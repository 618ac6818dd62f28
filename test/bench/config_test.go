package bench

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	_ "github.com/tandem-scheduler/tandem/pkg/apis/config/scheme"
)

func loadConfig(t *testing.T, file string) *schedconfig.KubeSchedulerConfiguration {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, file)
	if err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	return cfg
}

// The tandem side of the benchmark runs the shipped profile: the same
// plugins and plugin args, under scheduler_perf's scheduler name, but for
// its scoring, LeastAllocated as vanilla's, so that the two sides rank
// nodes alike, and runners in every namespace.
func TestTandemConfigIsShipped(t *testing.T) {
	shipped := loadConfig(t, filepath.Join("..", "..", "manifests", "scheduler-config.yaml"))
	bench := loadConfig(t, "scheduler-tandem.yaml")
	if len(shipped.Profiles) != 1 || len(bench.Profiles) != 1 {
		t.Fatalf("profiles: shipped %d, bench %d; want one each", len(shipped.Profiles), len(bench.Profiles))
	}
	want := shipped.Profiles[0]
	want.SchedulerName = bench.Profiles[0].SchedulerName
	for _, pc := range want.PluginConfig {
		if args, ok := pc.Args.(*config.WorkflowReservationArgs); ok {
			if args.ScoringStrategy.Type != config.MostAllocated {
				t.Errorf("shipped scoring %s, want MostAllocated", args.ScoringStrategy.Type)
			}
			args.ScoringStrategy.Type = config.LeastAllocated
			// scheduler_perf names its namespaces itself.
			args.RunnerNamespaces, args.HookTemplateNamespaces = nil, nil
		}
	}
	if diff := cmp.Diff(want, bench.Profiles[0]); diff != "" {
		t.Errorf("scheduler-tandem.yaml differs from the shipped profile (-shipped,+bench):\n%s", diff)
	}
}
