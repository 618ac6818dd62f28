package arc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// JobSpec is what prepare_job knows of a job: its job container's image and
// its service containers.
type JobSpec struct {
	Image    string
	Services []Service
}

// Service is a workflow `services:` entry.
type Service struct {
	Image string
	// Ports are docker-style mappings: "6379:6379", "8080", "53/udp".
	Ports []string
}

// ServiceName is the container name the hook gives a service: the image's
// last path element without its tag ("mirror.local:5000/library/redis:7" -> "redis").
func ServiceName(image string) string {
	name := image[strings.LastIndex(image, "/")+1:]
	name, _, _ = strings.Cut(name, ":")
	return name
}

// servicePorts turns port mappings into container ports the way the hook
// does (containerPorts in hooks v0.7.0): "host:container" becomes a
// hostPort and a containerPort, a lone "container" only a containerPort;
// "/udp" sets the protocol.
func servicePorts(mappings []string) ([]v1.ContainerPort, error) {
	var ports []v1.ContainerPort
	for _, m := range mappings {
		spec, proto, _ := strings.Cut(m, "/")
		protocol := v1.ProtocolTCP
		if proto != "" {
			protocol = v1.Protocol(strings.ToUpper(proto))
		}
		parts := strings.Split(spec, ":")
		if len(parts) > 2 {
			return nil, fmt.Errorf("port mapping %q: at most one \":\"", m)
		}
		var nums []int32
		for _, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("port mapping %q: %q is not a port", m, p)
			}
			nums = append(nums, int32(n))
		}
		port := v1.ContainerPort{ContainerPort: nums[len(nums)-1], Protocol: protocol}
		if len(nums) == 2 {
			port.HostPort = nums[0]
		}
		ports = append(ports, port)
	}
	return ports, nil
}

// placement is where the hook puts the pods it creates for a runner on
// node (the workflow pod and, alike, its container-step pods): nodeName
// (v0.7.0), a required hostname affinity (v0.7.0 with the kube-scheduler,
// the next hook with RWO), a preferred one (the next hook), or nothing
// (novolume).
func placement(mode HookMode, node string, spec *v1.PodSpec) error {
	hostname := v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}},
	}}
	switch mode {
	case HookNodeName:
		spec.NodeName = node
	case HookKubeScheduler, HookNextRWO:
		spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{hostname}},
		}}
	case HookNextPreferred:
		spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 100, Preference: hostname}},
		}}
	case HookNoVolume:
	default:
		return fmt.Errorf("unknown hook mode %q", mode)
	}
	return nil
}

// workClaim is the runner's work PVC: ACTIONS_RUNNER_CLAIM_NAME or
// "<runner>-work".
func workClaim(runner *v1.Pod) []v1.Volume {
	claim, ok := runnerEnv(runner, EnvClaimName)
	if !ok || claim == "" {
		claim = WorkClaimName(runner.Name)
	}
	return []v1.Volume{{Name: WorkVolume, VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}}
}

// WorkflowPod builds the workflow pod prepare_job creates for runner (bound
// to its node) in mode, merged with the hook template (YAML, may be empty):
//   - name: the runner name cut to 54 characters + "-workflow";
//   - label runner-pod=<runner>, no owner references;
//   - container "job" (tail -f /dev/null) and one container per service,
//     "host:container" port mappings as hostPorts, no resources of its own;
//   - placed as placement says for the mode, with the work PVC
//     (ACTIONS_RUNNER_CLAIM_NAME or "<runner>-work"); novolume: emptyDirs;
//   - template: metadata labels/annotations added; "$job" merged into job,
//     "$<service>" into that service, other containers appended; every other
//     spec key overwrites the hook's (volumes are appended).
func WorkflowPod(runner *v1.Pod, mode HookMode, hookTemplate string, job JobSpec) (*v1.Pod, error) {
	image := job.Image
	if image == "" {
		image = "ubuntu:24.04"
	}
	pod := &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        WorkflowPodName(runner.Name),
			Namespace:   runner.Namespace,
			Labels:      map[string]string{RunnerPodLabel: runner.Name},
			Annotations: map[string]string{},
		},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name:         JobContainer,
				Image:        image,
				Command:      []string{"tail"},
				Args:         []string{"-f", "/dev/null"},
				WorkingDir:   "/__w/repo/repo",
				VolumeMounts: []v1.VolumeMount{{Name: WorkVolume, MountPath: "/__w"}},
			}},
		},
	}
	for _, s := range job.Services {
		ports, err := servicePorts(s.Ports)
		if err != nil {
			return nil, fmt.Errorf("service %s: %w", s.Image, err)
		}
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: ServiceName(s.Image), Image: s.Image, Ports: ports})
	}
	if err := placement(mode, runner.Spec.NodeName, &pod.Spec); err != nil {
		return nil, err
	}
	if mode.usesVolume() {
		pod.Spec.Volumes = workClaim(runner)
	} else {
		noVolume(runner, &pod.Spec)
	}
	if strings.TrimSpace(hookTemplate) == "" {
		return pod, nil
	}
	return mergeTemplate(pod, hookTemplate)
}

// The hooks v0.8 (novolume) workflow pod's own volumes and where the job
// container mounts them.
const (
	ExternalsVolume = "externals"
	GitHubVolume    = "github"
	FSInitContainer = "fs-init"
)

// noVolume gives spec what hooks v0.8 puts in place of the work claim: three
// emptyDirs (externals, github, work), an init container fs-init of the
// runner's image (ACTIONS_RUNNER_IMAGE, else the runner container's) with
// no resources that fills them (its command is not modelled: the emulated
// kubelet runs nothing), and fsGroup 1001. The workspace is copied in over
// pods/exec once the pod runs. fs-init counts in the pod's request
// only through a LimitRange default.
func noVolume(runner *v1.Pod, spec *v1.PodSpec) {
	image, ok := runnerEnv(runner, EnvRunnerImage)
	if !ok || image == "" {
		image = runnerContainerImage(runner)
	}
	mounts := []v1.VolumeMount{
		{Name: ExternalsVolume, MountPath: "/__e"},
		{Name: GitHubVolume, MountPath: "/github"},
		{Name: WorkVolume, MountPath: "/__w"},
	}
	spec.InitContainers = []v1.Container{{
		Name:         FSInitContainer,
		Image:        image,
		VolumeMounts: mounts,
	}}
	spec.Containers[0].VolumeMounts = mounts
	spec.Volumes = nil
	for _, name := range []string{ExternalsVolume, GitHubVolume, WorkVolume} {
		spec.Volumes = append(spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	}
	spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](1001)}
}

// runnerContainerImage is the image of the runner pod's runner container
// (the first container when none is named "runner").
func runnerContainerImage(runner *v1.Pod) string {
	image := ""
	for i, c := range runner.Spec.Containers {
		if i == 0 || c.Name == RunnerContainer {
			image = c.Image
		}
	}
	return image
}

// mergeTemplate applies the hook template the way the hook does, key by key
// on the JSON form, so that exactly the keys the template sets win.
func mergeTemplate(pod *v1.Pod, hookTemplate string) (*v1.Pod, error) {
	var tmpl struct {
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(hookTemplate), &tmpl); err != nil {
		return nil, fmt.Errorf("hook template: %w", err)
	}
	for k, v := range tmpl.Metadata.Labels {
		pod.Labels[k] = v
	}
	for k, v := range tmpl.Metadata.Annotations {
		pod.Annotations[k] = v
	}
	spec, err := toMap(pod.Spec)
	if err != nil {
		return nil, err
	}
	containers, _ := spec["containers"].([]any)
	for key, value := range tmpl.Spec {
		switch key {
		case "containers":
			list, _ := value.([]any)
			for _, item := range list {
				c, _ := item.(map[string]any)
				name, _ := c["name"].(string)
				if !strings.HasPrefix(name, "$") {
					containers = append(containers, c)
					continue
				}
				for _, existing := range containers {
					if e, _ := existing.(map[string]any); e["name"] == strings.TrimPrefix(name, "$") {
						mergeContainer(e, c)
					}
				}
			}
		case "volumes":
			base, _ := spec["volumes"].([]any)
			extra, _ := value.([]any)
			spec["volumes"] = append(base, extra...)
		default:
			spec[key] = value
		}
	}
	spec["containers"] = containers
	var merged v1.PodSpec
	if err := fromMap(spec, &merged); err != nil {
		return nil, fmt.Errorf("hook template: %w", err)
	}
	pod.Spec = merged
	return pod, nil
}

// mergeContainer merges a "$name" template container into base: name and
// image stay, env/volumeMounts/ports are appended, other keys overwrite.
func mergeContainer(base, from map[string]any) {
	for key, value := range from {
		switch key {
		case "name", "image":
		case "env", "volumeMounts", "ports":
			list, _ := base[key].([]any)
			extra, _ := value.([]any)
			base[key] = append(list, extra...)
		default:
			base[key] = value
		}
	}
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func fromMap(m map[string]any, out any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
