package arc

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// longRunner is a 63-character runner pod name, the longest ARC creates.
var longRunner = strings.Repeat("a", 46) + "-bcdfg-runner-xz245"

func boundRunner(name string, env ...v1.EnvVar) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "arc"},
		Spec: v1.PodSpec{
			NodeName:   "node-1",
			Containers: []v1.Container{{Name: RunnerContainer, Env: env}},
		},
	}
}

// noVolumeSpec is the hooks v0.8 workflow pod's spec around job (ARC-CONTRACT.md, "The workflow pod of hooks v0.8.x").
func noVolumeSpec(job v1.Container, runnerImage string) v1.PodSpec {
	mounts := []v1.VolumeMount{{Name: "externals", MountPath: "/__e"}, {Name: "github", MountPath: "/github"}, {Name: "work", MountPath: "/__w"}}
	job.VolumeMounts = mounts
	emptyDir := v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
	return v1.PodSpec{
		RestartPolicy:   v1.RestartPolicyNever,
		InitContainers:  []v1.Container{{Name: "fs-init", Image: runnerImage, VolumeMounts: mounts}},
		Containers:      []v1.Container{job},
		Volumes:         []v1.Volume{{Name: "externals", VolumeSource: emptyDir}, {Name: "github", VolumeSource: emptyDir}, {Name: "work", VolumeSource: emptyDir}},
		SecurityContext: &v1.PodSecurityContext{FSGroup: ptr.To[int64](1001)},
	}
}

func hostnameAffinity(node string) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
}

func preferredAffinity(node string) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 100, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
}

func claimVolume(claim string) []v1.Volume {
	return []v1.Volume{{Name: WorkVolume, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
}

func TestWorkflowPod(t *testing.T) {
	jobContainer := v1.Container{
		Name: JobContainer, Image: "node:22", Command: []string{"tail"}, Args: []string{"-f", "/dev/null"},
		WorkingDir: "/__w/repo/repo", VolumeMounts: []v1.VolumeMount{{Name: WorkVolume, MountPath: "/__w"}},
	}
	withRequests := func(c v1.Container, cpu string) v1.Container {
		c.Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
		return c
	}
	tests := map[string]struct {
		runner   *v1.Pod
		mode     HookMode
		template string
		job      JobSpec
		wantName string
		wantSpec v1.PodSpec
	}{
		"v0.7.0 default: nodeName and the runner's work claim": {
			runner:   boundRunner("set-abcde-runner-fghjk"),
			mode:     HookNodeName,
			job:      JobSpec{Image: "node:22"},
			wantName: "set-abcde-runner-fghjk-workflow",
			wantSpec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever, NodeName: "node-1",
				Containers: []v1.Container{jobContainer}, Volumes: claimVolume("set-abcde-runner-fghjk-work"),
			},
		},
		"63-character runner: name cut to 54 + -workflow, label keeps the full name": {
			runner:   boundRunner(longRunner),
			mode:     HookNodeName,
			job:      JobSpec{Image: "node:22"},
			wantName: longRunner[:54] + "-workflow",
			wantSpec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever, NodeName: "node-1",
				Containers: []v1.Container{jobContainer}, Volumes: claimVolume(longRunner + "-work"),
			},
		},
		"v0.7.0 kube-scheduler: required hostname affinity, ACTIONS_RUNNER_CLAIM_NAME wins": {
			runner:   boundRunner("r", v1.EnvVar{Name: EnvClaimName, Value: "shared-claim"}),
			mode:     HookKubeScheduler,
			job:      JobSpec{Image: "node:22"},
			wantName: "r-workflow",
			wantSpec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever, Affinity: hostnameAffinity("node-1"),
				Containers: []v1.Container{jobContainer}, Volumes: claimVolume("shared-claim"),
			},
		},
		"novolume: not pinned; fs-init of ACTIONS_RUNNER_IMAGE fills three emptyDirs; fsGroup 1001": {
			runner:   boundRunner("r", v1.EnvVar{Name: EnvRunnerImage, Value: "runner:2.330.0"}),
			mode:     HookNoVolume,
			job:      JobSpec{Image: "node:22"},
			wantName: "r-workflow",
			wantSpec: noVolumeSpec(jobContainer, "runner:2.330.0"),
		},
		"novolume without ACTIONS_RUNNER_IMAGE: fs-init runs the runner container's image": {
			runner: func() *v1.Pod {
				r := boundRunner("r")
				r.Spec.Containers[0].Image = "runner:2.329.0"
				return r
			}(),
			mode:     HookNoVolume,
			job:      JobSpec{Image: "node:22"},
			wantName: "r-workflow",
			wantSpec: noVolumeSpec(jobContainer, "runner:2.329.0"),
		},
		"next hook: preferred hostname affinity, the work claim, never nodeName": {
			runner:   boundRunner("r"),
			mode:     HookNextPreferred,
			job:      JobSpec{Image: "node:22"},
			wantName: "r-workflow",
			wantSpec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever, Affinity: preferredAffinity("node-1"),
				Containers: []v1.Container{jobContainer}, Volumes: claimVolume("r-work"),
			},
		},
		"next hook with ACTIONS_RUNNER_HOOK_RWO: required hostname affinity": {
			runner:   boundRunner("r"),
			mode:     HookNextRWO,
			job:      JobSpec{Image: "node:22"},
			wantName: "r-workflow",
			wantSpec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever, Affinity: hostnameAffinity("node-1"),
				Containers: []v1.Container{jobContainer}, Volumes: claimVolume("r-work"),
			},
		},
		"template: $job and $redis merged, sidecar appended, schedulerName set, nodeName kept": {
			runner: boundRunner("r"),
			mode:   HookNodeName,
			template: `
metadata:
  labels: {team: ci}
spec:
  schedulerName: tandem-scheduler
  containers:
  - name: $job
    image: ignored
    resources: {requests: {cpu: "2"}}
  - name: $redis
    resources: {requests: {cpu: 100m}}
  - name: sidecar
    image: proxy
    resources: {requests: {cpu: 50m}}
  volumes:
  - name: cache
    emptyDir: {}
`,
			job:      JobSpec{Image: "node:22", Services: []Service{{Image: "mirror.local:5000/library/redis:7", Ports: []string{"6379:6379"}}}},
			wantName: "r-workflow",
			wantSpec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever, NodeName: "node-1", SchedulerName: "tandem-scheduler",
				Containers: []v1.Container{
					withRequests(jobContainer, "2"),
					withRequests(v1.Container{Name: "redis", Image: "mirror.local:5000/library/redis:7",
						Ports: []v1.ContainerPort{{HostPort: 6379, ContainerPort: 6379, Protocol: v1.ProtocolTCP}}}, "100m"),
					withRequests(v1.Container{Name: "sidecar", Image: "proxy"}, "50m"),
				},
				Volumes: append(claimVolume("r-work"), v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := WorkflowPod(tc.runner, tc.mode, tc.template, tc.job)
			if err != nil {
				t.Fatalf("WorkflowPod: %v", err)
			}
			if got.Name != tc.wantName || len(got.Name) > 63 {
				t.Errorf("name = %q, want %q (at most 63 characters)", got.Name, tc.wantName)
			}
			if got.Labels[RunnerPodLabel] != tc.runner.Name {
				t.Errorf("label %s = %q, want the full runner name %q", RunnerPodLabel, got.Labels[RunnerPodLabel], tc.runner.Name)
			}
			if len(got.OwnerReferences) != 0 {
				t.Errorf("owner references = %v, want none", got.OwnerReferences)
			}
			if diff := cmp.Diff(tc.wantSpec, got.Spec); diff != "" {
				t.Errorf("spec (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWorkflowPodTemplateLabels(t *testing.T) {
	got, err := WorkflowPod(boundRunner("r"), HookNodeName, "metadata:\n  labels: {team: ci}\n  annotations: {a: b}\n", JobSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{RunnerPodLabel: "r", "team": "ci"}, got.Labels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"a": "b"}, got.Annotations); diff != "" {
		t.Errorf("annotations (-want,+got):\n%s", diff)
	}
}

func TestServiceName(t *testing.T) {
	for image, want := range map[string]string{
		"redis:7":                               "redis",
		"mirror.local:5000/library/postgres:16": "postgres",
		"mysql":                                 "mysql",
	} {
		if got := ServiceName(image); got != want {
			t.Errorf("ServiceName(%q) = %q, want %q", image, got, want)
		}
	}
}

// The hook's containerPorts: "host:container" is a host port, a lone port
// only a container port.
func TestServicePorts(t *testing.T) {
	tests := map[string]struct {
		mappings []string
		want     []v1.ContainerPort
		wantErr  bool
	}{
		"host:container":      {mappings: []string{"6379:6379"}, want: []v1.ContainerPort{{HostPort: 6379, ContainerPort: 6379, Protocol: v1.ProtocolTCP}}},
		"other host port":     {mappings: []string{"15432:5432"}, want: []v1.ContainerPort{{HostPort: 15432, ContainerPort: 5432, Protocol: v1.ProtocolTCP}}},
		"container port only": {mappings: []string{"8080"}, want: []v1.ContainerPort{{ContainerPort: 8080, Protocol: v1.ProtocolTCP}}},
		"udp":                 {mappings: []string{"53:53/udp"}, want: []v1.ContainerPort{{HostPort: 53, ContainerPort: 53, Protocol: v1.ProtocolUDP}}},
		"two colons":          {mappings: []string{"1:2:3"}, wantErr: true},
		"not a port":          {mappings: []string{"70000:1"}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := servicePorts(tc.mappings)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ports (-want,+got):\n%s", diff)
			}
		})
	}
}
