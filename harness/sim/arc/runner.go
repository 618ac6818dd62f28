package arc

import (
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// HookMode is the container hook the runner image runs and how it is set.
type HookMode string

const (
	// HookNodeName is hooks v0.7.0 (containerMode kubernetes), workflow pod
	// pinned with spec.nodeName: it bypasses every scheduler.
	HookNodeName HookMode = "v0.7.0-nodename"
	// HookKubeScheduler is hooks v0.7.0 with ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true,
	// workflow pod pinned with a required hostname node affinity.
	HookKubeScheduler HookMode = "v0.7.0-kube-scheduler"
	// HookNoVolume is hooks v0.8.1 (containerMode kubernetes-novolume),
	// emptyDirs, workflow pod not pinned.
	HookNoVolume HookMode = "novolume"
	// HookNextPreferred is the next hook (upstream PRs #339/#445, not
	// released): the work PVC again, ReadWriteMany by default, and a
	// preferred node affinity to the runner's node; never nodeName.
	HookNextPreferred HookMode = "next-preferred"
	// HookNextRWO is the next hook with ACTIONS_RUNNER_HOOK_RWO=true: a
	// ReadWriteOnce work PVC and a required hostname affinity.
	HookNextRWO HookMode = "next-rwo"
)

// HookModes lists the modes the emulator knows.
var HookModes = []HookMode{HookNodeName, HookKubeScheduler, HookNoVolume, HookNextPreferred, HookNextRWO}

// Valid reports whether m is a known mode.
func (m HookMode) Valid() bool {
	for _, k := range HookModes {
		if m == k {
			return true
		}
	}
	return false
}

// usesVolume reports whether the hook shares a PVC with the workflow pod.
func (m HookMode) usesVolume() bool { return m != HookNoVolume }

// stepJobs reports whether the hook runs a container step as a batch/v1
// Job (hooks v0.7.0 and the next hook) rather than as a bare pod (v0.8).
func (m HookMode) stepJobs() bool { return m != HookNoVolume }

// workAccessMode is the access mode of the runner's work volume: the next
// hook's default is ReadWriteMany (its workflow pod may run on another
// node), every other PVC mode ReadWriteOnce.
func (m HookMode) workAccessMode() v1.PersistentVolumeAccessMode {
	if m == HookNextPreferred {
		return v1.ReadWriteMany
	}
	return v1.ReadWriteOnce
}

// hookScript is the hook the runner image runs for the mode.
func (m HookMode) hookScript() string {
	if m == HookNoVolume {
		return "/home/runner/k8s-novolume/index.js"
	}
	return "/home/runner/k8s/index.js"
}

const (
	// RunnerContainer is the runner pod's container.
	RunnerContainer = "runner"
	// HookTemplateDir is where the hook template ConfigMap is mounted.
	HookTemplateDir  = "/home/runner/pod-templates"
	hookTemplateKey  = "default.yaml"
	hookTemplateVol  = "hook-template"
	runnerImage      = "actions/actions-runner:latest"
	defaultWorkClaim = "1Gi"
)

// ScaleSet is an AutoscalingRunnerSet as the chart's values describe it.
type ScaleSet struct {
	Name      string
	Namespace string
	// Suffix is the EphemeralRunnerSet's generated suffix (runner names).
	Suffix     string
	MinRunners int
	MaxRunners int
	HookMode   HookMode
	// Runner is the runner container's resources.
	Runner v1.ResourceRequirements
	// Template is what template.metadata/template.spec add to runner pods.
	Labels, Annotations map[string]string
	NodeSelector        map[string]string
	Tolerations         []v1.Toleration
	Affinity            *v1.Affinity
	PriorityClassName   string
	SchedulerName       string
	// HookTemplate is the hook template file (a PodTemplateSpec in YAML),
	// mounted from the ConfigMap HookTemplateConfigMap; empty for none.
	HookTemplate string
	// PrepareJobTimeout sets ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS
	// when positive.
	PrepareJobTimeout time.Duration
	// RequireJobContainer is ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER (the
	// chart sets true).
	RequireJobContainer bool
	// StorageClass and WorkSize shape the work volume's claim template.
	StorageClass string
	WorkSize     resource.Quantity
}

// HookTemplateConfigMap is the name of the ConfigMap holding the set's hook template.
func (s *ScaleSet) HookTemplateConfigMap() string { return s.Name + "-hook-template" }

// HookTemplatePath is the file the runner's hook reads.
func (s *ScaleSet) HookTemplatePath() string { return HookTemplateDir + "/" + hookTemplateKey }

// ConfigMap returns the ConfigMap with the hook template, nil when there is none.
func (s *ScaleSet) ConfigMap() *v1.ConfigMap {
	if s.HookTemplate == "" {
		return nil
	}
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: s.HookTemplateConfigMap(), Namespace: s.Namespace},
		Data:       map[string]string{hookTemplateKey: s.HookTemplate},
	}
}

// RunnerPod builds the runner pod ARC's EphemeralRunner controller creates
// for the set: ARC's labels and annotations plus the template's, the chart's
// env for the hook mode, restartPolicy Never, the work volume, and an owner
// reference to its EphemeralRunner.
func (s *ScaleSet) RunnerPod(name string) *v1.Pod {
	labels := map[string]string{
		LabelEphemeralRunner:   "True",
		LabelComponent:         "runner",
		LabelPartOf:            "gha-runner-scale-set",
		LabelScaleSetName:      s.Name,
		LabelScaleSetNamespace: s.Namespace,
	}
	for k, v := range s.Labels {
		labels[k] = v
	}
	annotations := map[string]string{
		AnnotationRunnerGroupName:    "default",
		AnnotationRunnerScaleSetName: s.Name,
		AnnotationPatchID:            "0",
		AnnotationRunnerSpecHash:     "sim",
	}
	for k, v := range s.Annotations {
		annotations[k] = v
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "actions.github.com/v1alpha1", Kind: "EphemeralRunner", Name: name,
				UID: types.UID("ephemeralrunner-" + name), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1.PodSpec{
			RestartPolicy:      v1.RestartPolicyNever,
			ServiceAccountName: s.Name + "-gha-rs-kube-mode",
			SchedulerName:      s.SchedulerName,
			NodeSelector:       s.NodeSelector,
			Tolerations:        s.Tolerations,
			Affinity:           s.Affinity.DeepCopy(),
			PriorityClassName:  s.PriorityClassName,
			Containers: []v1.Container{{
				Name:      RunnerContainer,
				Image:     runnerImage,
				Command:   []string{"/home/runner/run.sh"},
				Resources: *s.Runner.DeepCopy(),
				Env:       s.runnerEnv(),
				VolumeMounts: []v1.VolumeMount{
					{Name: WorkVolume, MountPath: "/home/runner/_work"},
				},
			}},
			Volumes: []v1.Volume{s.workVolume()},
		},
	}
	if s.HookTemplate != "" {
		c := &pod.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: hookTemplateVol, MountPath: HookTemplateDir, ReadOnly: true})
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: hookTemplateVol, VolumeSource: v1.VolumeSource{
			ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: s.HookTemplateConfigMap()}},
		}})
	}
	return pod
}

func (s *ScaleSet) runnerEnv() []v1.EnvVar {
	env := []v1.EnvVar{
		{Name: EnvContainerHooks, Value: s.HookMode.hookScript()},
		{Name: EnvPodName, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: EnvRequireJobContainer, Value: strconv.FormatBool(s.RequireJobContainer)},
	}
	if s.HookTemplate != "" {
		env = append(env, v1.EnvVar{Name: EnvHookTemplate, Value: s.HookTemplatePath()})
	}
	switch s.HookMode {
	case HookKubeScheduler:
		env = append(env, v1.EnvVar{Name: EnvUseKubeScheduler, Value: "true"})
	case HookNextRWO:
		env = append(env, v1.EnvVar{Name: EnvHookRWO, Value: "true"})
	}
	if s.PrepareJobTimeout > 0 {
		env = append(env, v1.EnvVar{Name: EnvPrepareJobTimeout, Value: fmt.Sprint(int64(s.PrepareJobTimeout / time.Second))})
	}
	return env
}

// workVolume is the chart's work volume: a generic ephemeral claim for
// kubernetes mode (ReadWriteOnce; ReadWriteMany for the next hook's
// default), an emptyDir for kubernetes-novolume.
func (s *ScaleSet) workVolume() v1.Volume {
	if !s.HookMode.usesVolume() {
		return v1.Volume{Name: WorkVolume, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
	}
	size := s.WorkSize
	if size.IsZero() {
		size = resource.MustParse(defaultWorkClaim)
	}
	var class *string
	if s.StorageClass != "" {
		class = ptr.To(s.StorageClass)
	}
	return v1.Volume{Name: WorkVolume, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{s.HookMode.workAccessMode()},
			StorageClassName: class,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}},
		}},
	}}}
}
