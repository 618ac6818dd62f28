package scheme

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/apis/config/validation"
)

const pluginName = "WorkflowReservation"

// defaultArgs returns the internal args that defaulting produces.
func defaultArgs() *config.WorkflowReservationArgs {
	return &config.WorkflowReservationArgs{
		RunnerSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"actions-ephemeral-runner": "True"},
		},
		RunnerPodLabel:     "runner-pod",
		ScoringStrategy:    defaultScoring(),
		ReconcileInterval:  metav1.Duration{Duration: time.Minute},
		NoWorkflowPodGrace: metav1.Duration{Duration: 2 * time.Minute},
		PairPods:           true,
		ReservationMode:    "Memory",
		PlaceholderImage:   "pause:3.10",
		// kube-scheduler's defaults.
		PodInitialBackoffSeconds: 1,
		PodMaxBackoffSeconds:     10,
	}
}

func defaultScoring() *config.ScoringStrategy {
	return &config.ScoringStrategy{
		Type:      config.LeastAllocated,
		Resources: []config.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}},
	}
}

// withPluginConfig returns a v1 KubeSchedulerConfiguration with one profile that
// enables WorkflowReservation and has the given pluginConfig YAML.
func withPluginConfig(pluginConfig string) string {
	return `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: tandem-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: WorkflowReservation
` + pluginConfig
}

// workflowReservationArgs returns the args of our plugin in the only profile of cfg.
func workflowReservationArgs(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration) *config.WorkflowReservationArgs {
	t.Helper()
	if len(cfg.Profiles) != 1 {
		t.Fatalf("got %d profiles, want 1", len(cfg.Profiles))
	}
	var found []*config.WorkflowReservationArgs
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name != pluginName {
			continue
		}
		args, ok := pc.Args.(*config.WorkflowReservationArgs)
		if !ok {
			t.Fatalf("args of %s have type %T, want *config.WorkflowReservationArgs", pluginName, pc.Args)
		}
		found = append(found, args)
	}
	if len(found) != 1 {
		t.Fatalf("got %d pluginConfig entries for %s, want 1", len(found), pluginName)
	}
	return found[0]
}

func TestDecodeWorkflowReservationArgs(t *testing.T) {
	tests := map[string]struct {
		data     string
		wantArgs *config.WorkflowReservationArgs
		wantErr  string
	}{
		"all args": {
			data: withPluginConfig(`  pluginConfig:
  - name: WorkflowReservation
    args:
      runnerSelector:
        matchExpressions:
        - key: app
          operator: In
          values: [runner]
      runnerPodLabel: example.com/runner
      defaultWorkflowRequests:
        cpu: "2"
        memory: 4Gi
      defaultStepRequests:
        cpu: 500m
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 3
        - name: nvidia.com/gpu
      reconcileInterval: 30s
      stepRequestsFromHookTemplate: true
      defaultHostPorts: ["6379", "53/UDP"]
      noWorkflowPodGrace: 45s
      pairPods: false
      reservationMode: Pods
      placeholderImage: mirror.example/pause:3.10
      reservationEvents: true
      podInitialBackoffSeconds: 2
      podMaxBackoffSeconds: 30
`),
			wantArgs: &config.WorkflowReservationArgs{
				RunnerSelector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"runner"}},
					},
				},
				RunnerPodLabel: "example.com/runner",
				DefaultWorkflowRequests: v1.ResourceList{
					v1.ResourceCPU:    resource.MustParse("2"),
					v1.ResourceMemory: resource.MustParse("4Gi"),
				},
				DefaultStepRequests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("500m"),
				},
				ScoringStrategy: &config.ScoringStrategy{
					Type:      config.MostAllocated,
					Resources: []config.ResourceSpec{{Name: "cpu", Weight: 3}, {Name: "nvidia.com/gpu", Weight: 1}},
				},
				ReconcileInterval:            metav1.Duration{Duration: 30 * time.Second},
				StepRequestsFromHookTemplate: true,
				DefaultHostPorts:             []string{"6379", "53/UDP"},
				NoWorkflowPodGrace:           metav1.Duration{Duration: 45 * time.Second},
				PairPods:                     false,
				ReservationMode:              "Pods",
				PlaceholderImage:             "mirror.example/pause:3.10",
				ReservationEvents:            true,
				PodInitialBackoffSeconds:     2,
				PodMaxBackoffSeconds:         30,
			},
		},
		"some args, others defaulted": {
			data: withPluginConfig(`  pluginConfig:
  - name: WorkflowReservation
    args:
      defaultWorkflowRequests:
        cpu: "1"
        memory: 2Gi
`),
			wantArgs: func() *config.WorkflowReservationArgs {
				args := defaultArgs()
				args.DefaultWorkflowRequests = v1.ResourceList{
					v1.ResourceCPU:    resource.MustParse("1"),
					v1.ResourceMemory: resource.MustParse("2Gi"),
				}
				return args
			}(),
		},
		"empty args": {
			data: withPluginConfig(`  pluginConfig:
  - name: WorkflowReservation
    args: {}
`),
			wantArgs: defaultArgs(),
		},
		"pluginConfig without args": {
			data: withPluginConfig(`  pluginConfig:
  - name: WorkflowReservation
`),
			wantArgs: defaultArgs(),
		},
		"no pluginConfig": {
			data:     withPluginConfig(""),
			wantArgs: defaultArgs(),
		},
		"explicitly empty runnerPodLabel is kept": {
			data: withPluginConfig(`  pluginConfig:
  - name: WorkflowReservation
    args:
      runnerPodLabel: ""
`),
			wantArgs: func() *config.WorkflowReservationArgs {
				args := defaultArgs()
				args.RunnerPodLabel = ""
				return args
			}(),
		},
		"unknown field": {
			data: withPluginConfig(`  pluginConfig:
  - name: WorkflowReservation
    args:
      runnerPodLabell: x
`),
			wantErr: `unknown field "runnerPodLabell"`,
		},
		"invalid quantity": {
			data: withPluginConfig(`  pluginConfig:
  - name: WorkflowReservation
    args:
      defaultWorkflowRequests:
        cpu: lots
`),
			wantErr: "decoding args for plugin WorkflowReservation: quantities must match",
		},
	}
	decoder := kubeschedulerscheme.Codecs.UniversalDecoder()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj, _, err := decoder.Decode([]byte(tc.data), nil, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Decode() error = %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode() unexpected error: %v", err)
			}
			cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
			if !ok {
				t.Fatalf("decoded into %T, want *config.KubeSchedulerConfiguration", obj)
			}
			if diff := cmp.Diff(tc.wantArgs, workflowReservationArgs(t, cfg)); diff != "" {
				t.Errorf("unexpected args (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestLoadConfigFromFile loads files the way kube-scheduler's --config flag
// does, which decodes strictly.
func TestLoadConfigFromFile(t *testing.T) {
	tests := map[string]struct {
		data     string
		wantArgs *config.WorkflowReservationArgs
		wantErr  string
	}{
		"defaults": {
			data:     withPluginConfig(""),
			wantArgs: defaultArgs(),
		},
		"unknown field is rejected": {
			data: withPluginConfig(`  pluginConfig:
  - name: WorkflowReservation
    args:
      runnerPodLabell: x
`),
			wantErr: `strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for plugin WorkflowReservation: strict decoding error: unknown field "runnerPodLabell"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := options.LoadConfigFromFile(logger, file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LoadConfigFromFile() error = %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadConfigFromFile() unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.wantArgs, workflowReservationArgs(t, cfg)); diff != "" {
				t.Errorf("unexpected args (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestManifest checks that manifests/scheduler-config.yaml loads and that
// its args are valid.
func TestManifest(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, filepath.Join("..", "..", "..", "..", "manifests", "scheduler-config.yaml"))
	if err != nil {
		t.Fatalf("LoadConfigFromFile() unexpected error: %v", err)
	}

	le := cfg.LeaderElection
	gotLeaderElection := []any{le.LeaderElect, le.ResourceName, le.ResourceNamespace}
	wantLeaderElection := []any{true, "tandem-scheduler", "kube-system"}
	if diff := cmp.Diff(wantLeaderElection, gotLeaderElection); diff != "" {
		t.Errorf("unexpected leaderElection (-want,+got):\n%s", diff)
	}
	if got, want := cfg.Profiles[0].SchedulerName, "tandem-scheduler"; got != want {
		t.Errorf("schedulerName = %q, want %q", got, want)
	}
	if !slices.ContainsFunc(cfg.Profiles[0].Plugins.MultiPoint.Enabled, func(p schedconfig.Plugin) bool { return p.Name == pluginName }) {
		t.Errorf("%s is not enabled at multiPoint: %v", pluginName, cfg.Profiles[0].Plugins.MultiPoint.Enabled)
	}

	wantArgs := defaultArgs()
	wantArgs.ScoringStrategy.Type = config.MostAllocated
	wantArgs.RunnerNamespaces = []string{"arc-runners"}
	wantArgs.HookTemplateNamespaces = []string{"arc-runners"}
	wantArgs.PlaceholderImage = "REGISTRY/tandem-pause:v0.40.0-k8s1.37"
	wantArgs.DefaultWorkflowRequests = v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("1"),
		v1.ResourceMemory: resource.MustParse("2Gi"),
	}
	wantArgs.DefaultStepRequests = v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("500m"),
		v1.ResourceMemory: resource.MustParse("1Gi"),
	}
	var scoreDisabled []string
	for _, p := range cfg.Profiles[0].Plugins.Score.Disabled {
		scoreDisabled = append(scoreDisabled, p.Name)
	}
	if diff := cmp.Diff([]string{"NodeResourcesFit"}, scoreDisabled); diff != "" {
		t.Errorf("score plugins disabled (-want,+got):\n%s", diff)
	}
	gotArgs := workflowReservationArgs(t, cfg)
	if diff := cmp.Diff(wantArgs, gotArgs); diff != "" {
		t.Errorf("unexpected args (-want,+got):\n%s", diff)
	}
	if err := validation.ValidateWorkflowReservationArgs(nil, gotArgs); err != nil {
		t.Errorf("ValidateWorkflowReservationArgs() unexpected error: %v", err)
	}
}

// TestEncodeRoundTrip checks that decoded args survive encoding back to v1,
// which kube-scheduler does when it logs or writes its component config.
func TestEncodeRoundTrip(t *testing.T) {
	tests := map[string]struct {
		data string
	}{
		"defaults": {
			data: withPluginConfig(""),
		},
		"all args": {
			data: withPluginConfig(`  pluginConfig:
  - name: WorkflowReservation
    args:
      runnerSelector:
        matchLabels:
          app: runner
      runnerPodLabel: example.com/runner
      defaultWorkflowRequests:
        cpu: "1"
        memory: 2Gi
      defaultStepRequests:
        memory: 512Mi
`),
		},
	}
	info, ok := runtime.SerializerInfoForMediaType(kubeschedulerscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeYAML)
	if !ok {
		t.Fatal("no YAML serializer")
	}
	encoder := kubeschedulerscheme.Codecs.EncoderForVersion(info.Serializer, schedconfigv1.SchemeGroupVersion)
	decoder := kubeschedulerscheme.Codecs.UniversalDecoder()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj, _, err := decoder.Decode([]byte(tc.data), nil, nil)
			if err != nil {
				t.Fatalf("Decode() unexpected error: %v", err)
			}
			wantArgs := workflowReservationArgs(t, obj.(*schedconfig.KubeSchedulerConfiguration))

			var buf bytes.Buffer
			if err := encoder.Encode(obj, &buf); err != nil {
				t.Fatalf("Encode() unexpected error: %v", err)
			}
			obj, _, err = decoder.Decode(buf.Bytes(), nil, nil)
			if err != nil {
				t.Fatalf("Decode() of encoded config unexpected error: %v\n%s", err, buf.String())
			}
			if diff := cmp.Diff(wantArgs, workflowReservationArgs(t, obj.(*schedconfig.KubeSchedulerConfiguration))); diff != "" {
				t.Errorf("unexpected args after round trip (-want,+got):\n%s", diff)
			}
		})
	}
}
