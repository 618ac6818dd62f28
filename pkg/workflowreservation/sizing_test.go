package workflowreservation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tandem-scheduler/tandem/pkg/contract"
)

func TestParseResourceList(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    v1.ResourceList
		wantErr string
	}{
		"cpu and memory": {
			in:   "cpu=2,memory=4Gi",
			want: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")},
		},
		"extended resource and spaces": {
			in:   " cpu=500m , nvidia.com/gpu=1 ",
			want: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), "nvidia.com/gpu": resource.MustParse("1")},
		},
		"empty":             {in: "  ", wantErr: "empty value"},
		"no equals":         {in: "cpu", wantErr: `"cpu" is not name=quantity`},
		"bad quantity":      {in: "cpu=two", wantErr: `invalid quantity "two" for cpu`},
		"negative quantity": {in: "memory=-1Gi", wantErr: "negative quantity"},
		"bad name":          {in: "c p u=1", wantErr: `invalid resource name "c p u"`},
		"duplicate":         {in: "cpu=1,cpu=2", wantErr: "given twice"},
		"only commas":       {in: ",,", wantErr: "no resources given"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseResourceList(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseResourceList (-want,+got):\n%s", diff)
			}
		})
	}
}

const hookTemplate = `
metadata:
  labels:
    team: ci
spec:
  initContainers:
  - name: fetch
    image: busybox
    resources:
      requests: {cpu: "3", memory: 128Mi}
  containers:
  - name: $job
    resources:
      requests: {cpu: "1", memory: 2Gi}
  - name: $redis
    resources:
      requests: {cpu: 500m, memory: 512Mi}
  - name: sidecar
    image: envoy
    resources:
      requests: {cpu: 250m, memory: 256Mi}
`

func TestHookTemplateRequests(t *testing.T) {
	tests := map[string]struct {
		data    string
		want    v1.ResourceList
		wantErr bool
	}{
		"job, service and sidecar summed, init container is the max for cpu": {
			data: hookTemplate,
			want: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("2816Mi")},
		},
		"overhead added": {
			data: "spec:\n  overhead: {cpu: 100m}\n  containers:\n  - name: $job\n    resources: {requests: {cpu: 1}}\n",
			want: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1100m")},
		},
		"no resources": {data: "spec:\n  containers:\n  - name: $job\n", want: v1.ResourceList{}},
		"not yaml":     {data: "spec: [", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := hookTemplateRequests(tc.data)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if !equalLists(tc.want, got) {
				t.Errorf("hookTemplateRequests = %v, want %v", contract.FormatResources(got), contract.FormatResources(tc.want))
			}
		})
	}
}

func equalLists(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if o, ok := b[n]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// withHookTemplate mounts ConfigMap cm at /home/runner/pod-templates and
// points the runner container's env at file.
func withHookTemplate(pod *v1.Pod, cm, file string) *v1.Pod {
	pod.Spec.Containers = []v1.Container{{
		Name:         "runner",
		Env:          []v1.EnvVar{{Name: contract.HookTemplateEnv, Value: file}},
		VolumeMounts: []v1.VolumeMount{{Name: "hook-template", MountPath: "/home/runner/pod-templates", ReadOnly: true}},
	}}
	pod.Spec.Volumes = []v1.Volume{{Name: "hook-template", VolumeSource: v1.VolumeSource{
		ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}},
	}}}
	return pod
}

func TestFindHookTemplate(t *testing.T) {
	subPath := runnerPod("r").Obj()
	subPath.Spec.Containers = []v1.Container{{
		Name:         "runner",
		Env:          []v1.EnvVar{{Name: contract.HookTemplateEnv, Value: "/etc/hook/job.yaml"}},
		VolumeMounts: []v1.VolumeMount{{Name: "tmpl", MountPath: "/etc/hook/job.yaml", SubPath: "content"}},
	}}
	subPath.Spec.Volumes = []v1.Volume{{Name: "tmpl", VolumeSource: v1.VolumeSource{
		ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "hooks"}},
	}}}
	items := withHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/renamed.yaml")
	items.Spec.Volumes[0].ConfigMap.Items = []v1.KeyToPath{{Key: "default.yaml", Path: "renamed.yaml"}}
	emptyDir := withHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
	emptyDir.Spec.Volumes[0].VolumeSource = v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}

	tests := map[string]struct {
		pod     *v1.Pod
		want    *hookTemplateRef
		wantErr string
	}{
		"no env":      {pod: runnerPod("r").Obj()},
		"file in dir": {pod: withHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/default.yaml"), want: &hookTemplateRef{path: "/home/runner/pod-templates/default.yaml", configMap: "hooks", key: "default.yaml"}},
		"subPath":     {pod: subPath, want: &hookTemplateRef{path: "/etc/hook/job.yaml", configMap: "hooks", key: "content"}},
		"items remap": {pod: items, want: &hookTemplateRef{path: "/home/runner/pod-templates/renamed.yaml", configMap: "hooks", key: "default.yaml"}},
		"not mounted": {pod: withHookTemplate(runnerPod("r").Obj(), "hooks", "/elsewhere/t.yaml"), wantErr: "not on any volume mount"},
		"emptyDir":    {pod: emptyDir, wantErr: "not a ConfigMap volume"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := findHookTemplate(tc.pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(hookTemplateRef{})); diff != "" {
				t.Errorf("findHookTemplate (-want,+got):\n%s", diff)
			}
		})
	}
}

func configMapLister(cms ...*v1.ConfigMap) corelisters.ConfigMapLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, cm := range cms {
		_ = idx.Add(cm)
	}
	return corelisters.NewConfigMapLister(idx)
}

func TestSize(t *testing.T) {
	hooks := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "hooks"},
		Data:       map[string]string{"default.yaml": hookTemplate, "broken.yaml": "spec: ["},
	}
	templated := func(file string) *v1.Pod {
		return withHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/"+file)
	}
	tests := map[string]struct {
		pod            *v1.Pod
		defaultWF      v1.ResourceList
		defaultStep    v1.ResourceList
		want           string
		wantSource     contract.Source
		wantProblems   []string
		wantUnintended bool
		// step headroom and host ports
		stepFromTemplate bool
		defaultPorts     []contract.HostPort
		wantStep         string
		wantStepSource   contract.Source
		wantPorts        string
	}{
		"annotation wins over template and default": {
			pod:        withHookTemplate(runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Obj(), "hooks", "/home/runner/pod-templates/default.yaml"),
			defaultWF:  v1.ResourceList{v1.ResourceCPU: resource.MustParse("7")},
			want:       "cpu=2",
			wantSource: contract.SourceAnnotation,
		},
		"hook template": {
			pod:        templated("default.yaml"),
			want:       "cpu=3,memory=2816Mi",
			wantSource: contract.SourceHookTemplate,
		},
		"malformed annotation falls through to the template": {
			pod:          withHookTemplate(runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=lots").Obj(), "hooks", "/home/runner/pod-templates/default.yaml"),
			want:         "cpu=3,memory=2816Mi",
			wantSource:   contract.SourceHookTemplate,
			wantProblems: []string{`invalid quantity "lots"`},
		},
		"missing ConfigMap key falls through to the default": {
			pod:          templated("other.yaml"),
			defaultWF:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
			want:         "cpu=1",
			wantSource:   contract.SourceDefault,
			wantProblems: []string{`has no key "other.yaml"`},
		},
		"unparsable template": {
			pod:          templated("broken.yaml"),
			wantProblems: []string{"cannot parse"},
		},
		"missing ConfigMap": {
			pod:          withHookTemplate(runnerPod("r").Obj(), "gone", "/home/runner/pod-templates/default.yaml"),
			wantProblems: []string{"ConfigMap arc/gone not found"},
		},
		"nothing configured": {pod: runnerPod("r").Obj(), wantUnintended: true},
		"step headroom from annotation beats the default": {
			pod:         runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Annotation(contract.StepRequestsAnnotation, "cpu=500m").Obj(),
			defaultStep: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
			want:        "cpu=1500m",
			wantSource:  contract.SourceAnnotation,
		},
		"step headroom from the hook template, by annotation": {
			pod:            withHookTemplate(runnerPod("r").Annotation(contract.StepRequestsAnnotation, "template").Obj(), "hooks", "/home/runner/pod-templates/default.yaml"),
			want:           "cpu=6,memory=5Gi",
			wantSource:     contract.SourceHookTemplate,
			wantStep:       "cpu=3,memory=2304Mi",
			wantStepSource: contract.SourceHookTemplate,
		},
		"step headroom from the hook template, by args; an explicit default wins": {
			pod:            templated("default.yaml"),
			defaultStep:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
			want:           "cpu=3100m,memory=2816Mi",
			wantSource:     contract.SourceHookTemplate,
			wantStep:       "cpu=100m",
			wantStepSource: contract.SourceDefault,
		},
		"step headroom from the hook template, by args": {
			pod:              runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj(),
			stepFromTemplate: true, // the runner has no template: no headroom
			want:             "cpu=1",
			wantSource:       contract.SourceAnnotation,
		},
		"step headroom from a template the runner does not name": {
			pod:          runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Annotation(contract.StepRequestsAnnotation, "Template").Obj(),
			want:         "cpu=1",
			wantSource:   contract.SourceAnnotation,
			wantProblems: []string{"names no hook template"},
		},
		"host ports from annotation beat the default": {
			pod:          runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Annotation(contract.HostPortsAnnotation, "6379, 53/udp").Obj(),
			defaultPorts: []contract.HostPort{{Protocol: v1.ProtocolTCP, Port: 80}},
			want:         "cpu=1",
			wantSource:   contract.SourceAnnotation,
			wantPorts:    "6379/TCP,53/UDP",
		},
		"malformed host ports fall back to the default": {
			pod:          runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Annotation(contract.HostPortsAnnotation, "6379,http").Obj(),
			defaultPorts: []contract.HostPort{{Protocol: v1.ProtocolTCP, Port: 80}},
			want:         "cpu=1",
			wantSource:   contract.SourceAnnotation,
			wantPorts:    "80/TCP",
			wantProblems: []string{`host port "http"`},
		},
		"default step headroom": {
			pod:         runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj(),
			defaultStep: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
			want:        "cpu=1,memory=1Gi",
			wantSource:  contract.SourceAnnotation,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &sizer{configMaps: configMapLister(hooks), defaultWorkflow: tc.defaultWF, defaultStep: tc.defaultStep,
				stepFromTemplate: tc.stepFromTemplate, defaultPorts: tc.defaultPorts}
			got := s.size(tc.pod)
			if got.intended == tc.wantUnintended {
				t.Errorf("intended = %v, want %v", got.intended, !tc.wantUnintended)
			}
			if tc.want == "" {
				if !got.workflow.IsZero() {
					t.Errorf("workflow = %s, want none", got.workflow)
				}
			} else {
				if got.workflow.String() != tc.want || got.source != tc.wantSource {
					t.Errorf("size = %s from %q, want %s from %q", got.workflow, got.source, tc.want, tc.wantSource)
				}
				wantPods := int64(1)
				if !got.step.IsZero() {
					wantPods = 2 // a step pod is a pod too
				}
				if got.workflow.Pods != wantPods {
					t.Errorf("workflow pods = %d, want %d", got.workflow.Pods, wantPods)
				}
				if tc.wantStep != "" && (got.step.String() != tc.wantStep || got.stepSource != tc.wantStepSource) {
					t.Errorf("step = %s from %q, want %s from %q", got.step, got.stepSource, tc.wantStep, tc.wantStepSource)
				}
				if strings.Join(portStrings(got.ports), ",") != tc.wantPorts {
					t.Errorf("ports = %v, want %q", got.ports, tc.wantPorts)
				}
			}
			if len(got.problems) != len(tc.wantProblems) {
				t.Fatalf("problems = %v, want %d matching %v", got.problems, len(tc.wantProblems), tc.wantProblems)
			}
			for i, p := range tc.wantProblems {
				if !strings.Contains(got.problems[i].Error(), p) {
					t.Errorf("problem %d = %v, want it to contain %q", i, got.problems[i], p)
				}
			}
		})
	}
}

func portStrings(ports []contract.HostPort) []string {
	var out []string
	for _, p := range ports {
		out = append(out, p.String())
	}
	return out
}

// The hook template is parsed once per version of its ConfigMap.
func TestHookTemplateCache(t *testing.T) {
	var c templateCache
	k := templateKey{uid: "cm", resourceVersion: "1", key: "default.yaml"}
	first, err := c.parse(k, hookTemplate)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.parse(k, "spec: [") // same version: the data is the same, not parsed again
	if again != first {
		t.Error("the same ConfigMap version was parsed again")
	}
	k.resourceVersion = "2"
	if _, err := c.parse(k, "spec: ["); err == nil {
		t.Error("a new ConfigMap version was not parsed")
	}
	if _, err := c.parse(k, hookTemplate); err == nil {
		t.Error("a cached error was not kept for its version")
	}
}
