package arc

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestRunnerPod(t *testing.T) {
	tests := map[string]struct {
		set           ScaleSet
		wantEnv       map[string]string
		wantEphemeral bool
	}{
		"kubernetes mode with template and timeout": {
			set: ScaleSet{Name: "set", Namespace: "arc", HookMode: HookNodeName, RequireJobContainer: true,
				HookTemplate: "spec: {}", PrepareJobTimeout: 90 * time.Second, StorageClass: "local"},
			wantEnv: map[string]string{
				EnvContainerHooks: "/home/runner/k8s/index.js", EnvPodName: "", EnvRequireJobContainer: "true",
				EnvHookTemplate: "/home/runner/pod-templates/default.yaml", EnvPrepareJobTimeout: "90",
			},
			wantEphemeral: true,
		},
		"kube-scheduler mode": {
			set: ScaleSet{Name: "set", Namespace: "arc", HookMode: HookKubeScheduler, RequireJobContainer: true},
			wantEnv: map[string]string{
				EnvContainerHooks: "/home/runner/k8s/index.js", EnvPodName: "", EnvRequireJobContainer: "true",
				EnvUseKubeScheduler: "true",
			},
			wantEphemeral: true,
		},
		"novolume": {
			set: ScaleSet{Name: "set", Namespace: "arc", HookMode: HookNoVolume},
			wantEnv: map[string]string{
				EnvContainerHooks: "/home/runner/k8s-novolume/index.js", EnvPodName: "", EnvRequireJobContainer: "false",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := tc.set.RunnerPod("set-bcdfg-runner-xz245")
			wantLabels := map[string]string{
				LabelEphemeralRunner: "True", LabelComponent: "runner", LabelPartOf: "gha-runner-scale-set",
				LabelScaleSetName: "set", LabelScaleSetNamespace: "arc",
			}
			if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
				t.Errorf("labels (-want,+got):\n%s", diff)
			}
			if pod.Spec.RestartPolicy != v1.RestartPolicyNever {
				t.Errorf("restartPolicy = %q, want Never", pod.Spec.RestartPolicy)
			}
			env := map[string]string{}
			for _, e := range pod.Spec.Containers[0].Env {
				env[e.Name] = e.Value
			}
			if diff := cmp.Diff(tc.wantEnv, env); diff != "" {
				t.Errorf("env (-want,+got):\n%s", diff)
			}
			work := pod.Spec.Volumes[0]
			if work.Name != WorkVolume || (work.Ephemeral != nil) != tc.wantEphemeral || (work.EmptyDir != nil) == tc.wantEphemeral {
				t.Errorf("work volume = %+v, want ephemeral claim: %v", work, tc.wantEphemeral)
			}
			if got := pod.OwnerReferences; len(got) != 1 || got[0].Kind != "EphemeralRunner" {
				t.Errorf("owner references = %v, want one EphemeralRunner", got)
			}
		})
	}
}
