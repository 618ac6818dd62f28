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
		// wantAccess is the work claim's access mode (default ReadWriteOnce).
		wantAccess v1.PersistentVolumeAccessMode
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
		"next hook, RWO": {
			set: ScaleSet{Name: "set", Namespace: "arc", HookMode: HookNextRWO, RequireJobContainer: true},
			wantEnv: map[string]string{
				EnvContainerHooks: "/home/runner/k8s/index.js", EnvPodName: "", EnvRequireJobContainer: "true",
				EnvHookRWO: "true",
			},
			wantEphemeral: true, wantAccess: v1.ReadWriteOnce,
		},
		"next hook, preferred: a ReadWriteMany work volume": {
			set: ScaleSet{Name: "set", Namespace: "arc", HookMode: HookNextPreferred, RequireJobContainer: true},
			wantEnv: map[string]string{
				EnvContainerHooks: "/home/runner/k8s/index.js", EnvPodName: "", EnvRequireJobContainer: "true",
			},
			wantEphemeral: true, wantAccess: v1.ReadWriteMany,
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
			if tc.wantEphemeral {
				want := tc.wantAccess
				if want == "" {
					want = v1.ReadWriteOnce
				}
				if got := work.Ephemeral.VolumeClaimTemplate.Spec.AccessModes; len(got) != 1 || got[0] != want {
					t.Errorf("work claim access modes = %v, want [%s]", got, want)
				}
			}
			if got := pod.OwnerReferences; len(got) != 1 || got[0].Kind != "EphemeralRunner" {
				t.Errorf("owner references = %v, want one EphemeralRunner", got)
			}
		})
	}
}

func TestRunnerFailure(t *testing.T) {
	terminated := func(code int32) v1.ContainerStatus {
		return v1.ContainerStatus{Name: RunnerContainer, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}}
	}
	running := v1.ContainerStatus{Name: RunnerContainer, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	tests := map[string]struct {
		status     v1.PodStatus
		wantFailed bool
		wantReason string
	}{
		"running": {
			status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running}},
		},
		"runner container exited 1": {
			status:     v1.PodStatus{Phase: v1.PodFailed, Reason: "Error", ContainerStatuses: []v1.ContainerStatus{terminated(1)}},
			wantFailed: true, wantReason: ReasonRunnerFailed,
		},
		"rejected by the kubelet OutOfcpu": {
			status:     v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfcpu", Message: "Pod was rejected"},
			wantFailed: true, wantReason: "OutOfcpu",
		},
		"evicted": {
			status:     v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", ContainerStatuses: []v1.ContainerStatus{running}},
			wantFailed: true, wantReason: "Evicted",
		},
		"marked failed by the pod garbage collector, container not terminated": {
			// ARC waits until the pod is deleted, then creates it again.
			status: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{running},
				Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByPodGC"}}},
		},
		"another container terminated": {
			status: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{
				{Name: "sidecar", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 2}}}, running}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			failed, reason, _ := RunnerFailure(&v1.Pod{Status: tc.status})
			if failed != tc.wantFailed || reason != tc.wantReason {
				t.Errorf("RunnerFailure = %v, %q; want %v, %q", failed, reason, tc.wantFailed, tc.wantReason)
			}
		})
	}
}
