package integration

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/contract"
)

// The ARC examples (examples/arc): the hook template file that the runners
// mount and tandem sizes from, and the gha-runner-scale-set values.
const (
	hookTemplateFile    = "examples/arc/hook-template.yaml"
	valuesKubernetes    = "examples/arc/values-kubernetes.yaml"
	valuesNoVolume      = "examples/arc/values-kubernetes-novolume.yaml"
	hookTemplateKey     = "hook-template.yaml"
	useKubeSchedulerEnv = "ACTIONS_RUNNER_USE_KUBE_SCHEDULER"
)

// exampleHookTemplate parses examples/arc/hook-template.yaml strictly.
func exampleHookTemplate(t *testing.T) *v1.PodTemplateSpec {
	t.Helper()
	var tpl v1.PodTemplateSpec
	if err := yaml.UnmarshalStrict(readFile(t, hookTemplateFile), &tpl); err != nil {
		t.Fatalf("%s: %v", hookTemplateFile, err)
	}
	return &tpl
}

// exampleRunnerSpec is template.spec of a gha-runner-scale-set values file.
func exampleRunnerSpec(t *testing.T, file string) v1.PodSpec {
	t.Helper()
	var values struct {
		Template struct {
			Spec v1.PodSpec `json:"spec"`
		} `json:"template"`
	}
	if err := yaml.Unmarshal(readFile(t, file), &values); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return values.Template.Spec
}

// exampleRunner is the runner pod ARC creates from the values file: its
// template.spec with ARC's labels and restart policy.
func (e *env) exampleRunner(name, valuesFile string) *v1.Pod {
	e.t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{
			"actions-ephemeral-runner":    "True",
			"app.kubernetes.io/component": "runner",
		}},
		Spec: exampleRunnerSpec(e.t, valuesFile),
	}
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	e.ownedByEphemeralRunner(pod)
	created, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating runner %s from %s: %v", name, valuesFile, err)
	}
	return created
}

// exampleWorkflowPod creates the workflow pod the container hook creates
// for runner with the example hook template: $job merged into the job
// container, the template's schedulerName and tolerations, and, when
// pinnedTo is set, the required hostname affinity of hooks v0.7.0 with
// ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true.
func (e *env) exampleWorkflowPod(runner, pinnedTo string) *v1.Pod {
	e.t.Helper()
	tpl := exampleHookTemplate(e.t)
	job := v1.Container{Name: "job", Image: "job-image", Command: []string{"tail", "-f", "/dev/null"}}
	for _, c := range tpl.Spec.Containers {
		if c.Name == "$job" {
			job.Resources = c.Resources
		}
	}
	name := runner + "-workflow"
	spec := podSpec{workflowOf: runner, mutate: func(pod *v1.Pod) {
		pod.Spec.Containers = []v1.Container{job}
		pod.Spec.SchedulerName = tpl.Spec.SchedulerName
		pod.Spec.Tolerations = tpl.Spec.Tolerations
	}}
	if pinnedTo != "" {
		pin := requireNode(pinnedTo)
		mutate := spec.mutate
		spec.mutate = func(pod *v1.Pod) { mutate(pod); pin(pod) }
	}
	return e.create(name, spec)
}

// The examples agree with each other: the runners mount the hook template
// ConfigMap that examples/arc/kustomization.yaml builds, at the path they
// name, are scheduled by tandem and tolerate the dedicated nodes the hook
// template's workflow pods tolerate.
func TestARCExamplesAgree(t *testing.T) {
	tpl := exampleHookTemplate(t)
	if tpl.Spec.SchedulerName != schedulerName {
		t.Errorf("hook template schedulerName = %q, want %q", tpl.Spec.SchedulerName, schedulerName)
	}
	if i := slices.IndexFunc(tpl.Spec.Containers, func(c v1.Container) bool { return c.Name == "$job" }); i < 0 || tpl.Spec.Containers[i].Resources.Requests.Cpu().IsZero() {
		t.Errorf("hook template has no $job container with a cpu request")
	}

	cms := byKey(kustomizeBuild(t, "examples/arc"))
	if len(cms) != 1 {
		t.Fatalf("examples/arc builds %d objects, want the hook template ConfigMap", len(cms))
	}
	var cm *v1.ConfigMap
	for key := range cms {
		cm = object[v1.ConfigMap](t, cms, key)
	}
	if cm.Data[hookTemplateKey] != string(readFile(t, hookTemplateFile)) {
		t.Errorf("ConfigMap %s does not hold %s under %s", cm.Name, hookTemplateFile, hookTemplateKey)
	}

	for file, wantUseKubeScheduler := range map[string]bool{valuesKubernetes: true, valuesNoVolume: false} {
		spec := exampleRunnerSpec(t, file)
		if spec.SchedulerName != schedulerName {
			t.Errorf("%s: schedulerName = %q, want %q", file, spec.SchedulerName, schedulerName)
		}
		if diff := cmp.Diff(tpl.Spec.Tolerations, spec.Tolerations); diff != "" {
			t.Errorf("%s: runner tolerations differ from the hook template's (-template,+runner):\n%s", file, diff)
		}
		env := map[string]string{}
		for _, ev := range spec.Containers[0].Env {
			env[ev.Name] = ev.Value
		}
		if got := env[useKubeSchedulerEnv] == "true"; got != wantUseKubeScheduler {
			t.Errorf("%s: %s=%q, want set to true: %v", file, useKubeSchedulerEnv, env[useKubeSchedulerEnv], wantUseKubeScheduler)
		}
		path := env[contract.HookTemplateEnv]
		var mounted bool
		for _, m := range spec.Containers[0].VolumeMounts {
			for _, vol := range spec.Volumes {
				if vol.Name == m.Name && vol.ConfigMap != nil && vol.ConfigMap.Name == cm.Name &&
					path == strings.TrimSuffix(m.MountPath, "/")+"/"+hookTemplateKey {
					mounted = true
				}
			}
		}
		if !mounted {
			t.Errorf("%s: %s=%q is not %s mounted from ConfigMap %s", file, contract.HookTemplateEnv, path, hookTemplateKey, cm.Name)
		}
	}
}
