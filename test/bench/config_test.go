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

// The tandem sides of the benchmark run the shipped profiles, Memory mode
// and Pods mode: the same plugins and plugin args, under scheduler_perf's
// scheduler name, but for their scoring, LeastAllocated as vanilla's, so
// that the two sides rank nodes alike, and runners in every namespace.
func TestTandemConfigIsShipped(t *testing.T) {
	for shippedFile, benchFile := range map[string]string{
		filepath.Join("..", "..", "manifests", "scheduler-config.yaml"):                      "scheduler-tandem.yaml",
		filepath.Join("..", "..", "manifests", "kustomize", "pods", "scheduler-config.yaml"): "scheduler-tandem-pods.yaml",
	} {
		t.Run(benchFile, func(t *testing.T) {
			shipped := loadConfig(t, shippedFile)
			bench := loadConfig(t, benchFile)
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
				t.Errorf("%s differs from the shipped profile %s (-shipped,+bench):\n%s", benchFile, shippedFile, diff)
			}
		})
	}
}
