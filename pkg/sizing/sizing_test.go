package sizing

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/sizing/sizingtest"
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
		// Issue 20: a quantity beyond int64 in the scheduler's units wrapped
		// to a negative amount (cpu=18446744073709551 became -616m), which
		// cancelled other runners' holds; a zero-valued resource under a new
		// name per runner grew the tally and the gauge's series forever.
		"cpu beyond what the scheduler counts":    {in: "cpu=18446744073709551", wantErr: "more cpu than tandem accepts"},
		"memory beyond what the scheduler counts": {in: "memory=9300000000000000000", wantErr: "more memory than tandem accepts"},
		// Within int64 on its own, it wrapped once the step headroom or
		// the runner's own request was added to it.
		"cpu that wraps when summed": {in: "cpu=9223372036854775807m", wantErr: "more cpu than tandem accepts"},
		"zero extended resource":     {in: "cpu=1,example.com/r7=0", wantErr: "zero quantity for example.com/r7"},
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

func TestHookTemplateRequests(t *testing.T) {
	tests := map[string]struct {
		data    string
		want    v1.ResourceList
		wantErr bool
	}{
		"job, service and sidecar summed, init container is the max for cpu": {
			data: sizingtest.HookTemplate,
			want: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("2816Mi")},
		},
		"overhead added": {
			data: "spec:\n  overhead: {cpu: 100m}\n  containers:\n  - name: $job\n    resources: {requests: {cpu: 1}}\n",
			want: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1100m")},
		},
		"no resources": {data: "spec:\n  containers:\n  - name: $job\n", want: v1.ResourceList{}},
		// Issue 20: beyond int64 in the scheduler's units it wrapped around.
		"cpu beyond what the scheduler counts": {data: "spec:\n  containers:\n  - name: $job\n    resources: {requests: {cpu: \"18446744073709551\"}}\n", wantErr: true},
		// A zero-valued resource asks for nothing: it is not kept.
		"zero extended resource dropped": {
			data: "spec:\n  containers:\n  - name: $job\n    resources: {requests: {cpu: 1, example.com/r7: 0}, limits: {example.com/r7: 0}}\n",
			want: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
		},
		"not yaml": {data: "spec: [", wantErr: true},
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
	items := sizingtest.WithHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/renamed.yaml")
	items.Spec.Volumes[0].ConfigMap.Items = []v1.KeyToPath{{Key: "default.yaml", Path: "renamed.yaml"}}
	emptyDir := sizingtest.WithHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
	emptyDir.Spec.Volumes[0].VolumeSource = v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}

	tests := map[string]struct {
		pod     *v1.Pod
		want    *HookTemplateRef
		wantErr string
	}{
		"no env":      {pod: runnerPod("r").Obj()},
		"file in dir": {pod: sizingtest.WithHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/default.yaml"), want: &HookTemplateRef{Path: "/home/runner/pod-templates/default.yaml", ConfigMap: "hooks", Key: "default.yaml"}},
		"subPath":     {pod: subPath, want: &HookTemplateRef{Path: "/etc/hook/job.yaml", ConfigMap: "hooks", Key: "content"}},
		"items remap": {pod: items, want: &HookTemplateRef{Path: "/home/runner/pod-templates/renamed.yaml", ConfigMap: "hooks", Key: "default.yaml"}},
		"not mounted": {pod: sizingtest.WithHookTemplate(runnerPod("r").Obj(), "hooks", "/elsewhere/t.yaml"), wantErr: "not on any volume mount"},
		"emptyDir":    {pod: emptyDir, wantErr: "not a ConfigMap volume"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := FindHookTemplate(tc.pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(HookTemplateRef{})); diff != "" {
				t.Errorf("FindHookTemplate (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSize(t *testing.T) {
	hooks := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "hooks"},
		Data: map[string]string{"default.yaml": sizingtest.HookTemplate, "broken.yaml": "spec: [",
			"no-job.yaml": "spec:\n  containers:\n  - name: envoy\n    resources:\n      requests: {cpu: 250m}\n",
			"claims.yaml": "spec:\n  resourceClaims:\n  - name: gpu\n    resourceClaimTemplateName: one-gpu\n  containers:\n  - name: $job\n    resources:\n      requests: {cpu: 250m}\n      claims: [{name: gpu}]\n"},
	}
	templated := func(file string) *v1.Pod {
		return sizingtest.WithHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/"+file)
	}
	tests := map[string]struct {
		pod            *v1.Pod
		defaultWF      v1.ResourceList
		defaultStep    v1.ResourceList
		want           string
		wantSource     contract.Source
		wantProblems   []string
		wantUnintended bool
		// max is maxWorkflowRequests.
		max v1.ResourceList
		// step headroom and host ports
		stepFromTemplate bool
		defaultPorts     []contract.HostPort
		wantStep         string
		wantStepSource   contract.Source
		wantPorts        string
		// wantNotice is in the notice; empty: no notice.
		wantNotice string
	}{
		"annotation wins over template and default": {
			pod:        sizingtest.WithHookTemplate(runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=2").Obj(), "hooks", "/home/runner/pod-templates/default.yaml"),
			defaultWF:  v1.ResourceList{v1.ResourceCPU: resource.MustParse("7")},
			want:       "cpu=2",
			wantSource: contract.SourceAnnotation,
		},
		// Issue 20: the runner's author does not decide how much one
		// runner may hold; the admin's maximum does.
		"annotation beyond the maximum is sized by the defaults": {
			pod:         runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=60").Annotation(contract.StepRequestsAnnotation, "cpu=1").Obj(),
			defaultWF:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
			defaultStep: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")},
			max:         v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")},
			want:        "cpu=1500m",
			wantSource:  contract.SourceDefault,
			wantStep:    "cpu=500m", wantStepSource: contract.SourceDefault,
			wantProblems: []string{"the size from annotation, cpu=61 with step headroom, holds 61 cpu, more than maxWorkflowRequests allows one runner (8)"},
		},
		"step headroom beyond the maximum counts too": {
			pod:          runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=6").Annotation(contract.StepRequestsAnnotation, "cpu=3").Obj(),
			defaultWF:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
			max:          v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")},
			want:         "cpu=1",
			wantSource:   contract.SourceDefault,
			wantProblems: []string{"holds 9 cpu"},
		},
		"template beyond the maximum without a default: no size": {
			pod:          templated("default.yaml"),
			max:          v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
			wantProblems: []string{"the size from hook-template, cpu=3,memory=2816Mi with step headroom, holds 2816Mi memory"},
		},
		"within the maximum": {
			pod:        runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=8,memory=64Gi").Obj(),
			max:        v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")},
			want:       "cpu=8,memory=64Gi",
			wantSource: contract.SourceAnnotation,
		},
		"hook template": {
			pod:        templated("default.yaml"),
			want:       "cpu=3,memory=2816Mi",
			wantSource: contract.SourceHookTemplate,
		},
		"malformed annotation falls through to the template": {
			pod:          sizingtest.WithHookTemplate(runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=lots").Obj(), "hooks", "/home/runner/pod-templates/default.yaml"),
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
			pod:          sizingtest.WithHookTemplate(runnerPod("r").Obj(), "gone", "/home/runner/pod-templates/default.yaml"),
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
			pod:            sizingtest.WithHookTemplate(runnerPod("r").Annotation(contract.StepRequestsAnnotation, "template").Obj(), "hooks", "/home/runner/pod-templates/default.yaml"),
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
		// Issue 37: each port is held on the node and read by every Filter
		// of a pod with host ports there.
		"more host ports than a reservation holds fall back to the default": {
			pod:          runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Annotation(contract.HostPortsAnnotation, "8001,8002,8003,8004,8005,8006,8007,8008,8009,8010,8011,8012,8013,8014,8015,8016,8017").Obj(),
			defaultPorts: []contract.HostPort{{Protocol: v1.ProtocolTCP, Port: 80}},
			want:         "cpu=1",
			wantSource:   contract.SourceAnnotation,
			wantPorts:    "80/TCP",
			wantProblems: []string{"17 host ports given, at most 16 are held"},
		},
		// Issue 41: the devices of the template's claims are not held.
		"hook template with resourceClaims": {
			pod:        templated("claims.yaml"),
			want:       "cpu=250m",
			wantSource: contract.SourceHookTemplate,
			wantNotice: "gives the workflow pod resourceClaims (gpu): tandem holds no device for them",
		},
		// ... also when the template gave the step headroom only: the
		// hooks build the workflow pod from it, claims included.
		"annotation sizes, the template with resourceClaims gives the step headroom": {
			pod:            sizingtest.WithHookTemplate(runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Annotation(contract.StepRequestsAnnotation, "template").Obj(), "hooks", "/home/runner/pod-templates/claims.yaml"),
			want:           "cpu=1250m",
			wantSource:     contract.SourceAnnotation,
			wantStep:       "cpu=250m",
			wantStepSource: contract.SourceHookTemplate,
			wantNotice:     "resourceClaims (gpu)",
		},
		// A missing $job matters only where the template sized the
		// workflow pod.
		"annotation sizes, the template without $job gives the step headroom": {
			pod:            sizingtest.WithHookTemplate(runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Annotation(contract.StepRequestsAnnotation, "template").Obj(), "hooks", "/home/runner/pod-templates/no-job.yaml"),
			want:           "cpu=1250m",
			wantSource:     contract.SourceAnnotation,
			wantStep:       "cpu=250m",
			wantStepSource: contract.SourceHookTemplate,
		},
		"hook template without $job": {
			pod:        templated("no-job.yaml"),
			want:       "cpu=250m",
			wantSource: contract.SourceHookTemplate,
			wantNotice: "has no $job container",
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
			s := &Sizer{configMaps: sizingtest.ConfigMapLister(hooks), defaultWorkflow: tc.defaultWF, defaultStep: tc.defaultStep,
				stepFromTemplate: tc.stepFromTemplate, defaultPorts: tc.defaultPorts, maxWorkflow: tc.max}
			got := s.Size(tc.pod)
			if got.Intended == tc.wantUnintended {
				t.Errorf("intended = %v, want %v", got.Intended, !tc.wantUnintended)
			}
			if tc.want == "" {
				if !got.Workflow.IsZero() {
					t.Errorf("workflow = %s, want none", got.Workflow)
				}
			} else {
				if got.Workflow.String() != tc.want || got.Source != tc.wantSource {
					t.Errorf("size = %s from %q, want %s from %q", got.Workflow, got.Source, tc.want, tc.wantSource)
				}
				wantPods := int64(1)
				if !got.Step.IsZero() {
					wantPods = 2 // a step pod is a pod too
				}
				if got.Workflow.Pods != wantPods {
					t.Errorf("workflow pods = %d, want %d", got.Workflow.Pods, wantPods)
				}
				if tc.wantStep != "" && (got.Step.String() != tc.wantStep || got.StepSource != tc.wantStepSource) {
					t.Errorf("step = %s from %q, want %s from %q", got.Step, got.StepSource, tc.wantStep, tc.wantStepSource)
				}
				if strings.Join(portStrings(got.Ports), ",") != tc.wantPorts {
					t.Errorf("ports = %v, want %q", got.Ports, tc.wantPorts)
				}
			}
			if (got.Notice == "") != (tc.wantNotice == "") || !strings.Contains(got.Notice, tc.wantNotice) {
				t.Errorf("notice = %q, want one containing %q", got.Notice, tc.wantNotice)
			}
			if len(got.Problems) != len(tc.wantProblems) {
				t.Fatalf("problems = %v, want %d matching %v", got.Problems, len(tc.wantProblems), tc.wantProblems)
			}
			for i, p := range tc.wantProblems {
				if !strings.Contains(got.Problems[i].Error(), p) {
					t.Errorf("problem %d = %v, want it to contain %q", i, got.Problems[i], p)
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
	first, err := c.parse(k, sizingtest.HookTemplate)
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
	if _, err := c.parse(k, sizingtest.HookTemplate); err == nil {
		t.Error("a cached error was not kept for its version")
	}
}

// Defect 4: a $job with only limits gets requests = limits when the pod is
// created (apiserver defaulting); the reservation must count them.
func TestHookTemplateLimitsOnly(t *testing.T) {
	got, err := hookTemplateRequests(`
spec:
  containers:
  - name: $job
    resources:
      limits: {cpu: "2", memory: 1Gi}
`)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cpu().Cmp(resource.MustParse("2")) != 0 || got.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("requests = %v, want cpu=2 memory=1Gi (requests default to limits)", contract.FormatResources(got))
	}
}

// Defect 4: a source that answers "nothing" is a problem, not an answer:
// the runner would be placed as if it had no workflow pod.
func TestZeroSizeIsNotAnAnswer(t *testing.T) {
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "hooks"},
		Data:       map[string]string{"empty.yaml": "spec:\n  containers:\n  - name: $job\n    image: node\n"},
	}
	fallback := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	for name, pod := range map[string]*v1.Pod{
		"hook template without resources": sizingtest.WithHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/empty.yaml"),
		"annotation of zeros":             runnerPod("r").Annotation(contract.WorkflowRequestsAnnotation, "cpu=0,memory=0").Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			s := &Sizer{configMaps: sizingtest.ConfigMapLister(cm), defaultWorkflow: fallback}
			got := s.Size(pod)
			if got.Source != contract.SourceDefault || got.Workflow.String() != "cpu=1" {
				t.Errorf("size = %s from %q, want cpu=1 from the default", got.Workflow, got.Source)
			}
			if len(got.Problems) != 1 {
				t.Errorf("problems = %v, want one saying the source asks for nothing", got.Problems)
			}
		})
	}
}

func TestHookModeOf(t *testing.T) {
	runner := func(env map[string]string, work bool) *v1.Pod {
		pod := runnerPod("r").Obj()
		c := v1.Container{Name: "runner"}
		for k, v := range env {
			c.Env = append(c.Env, v1.EnvVar{Name: k, Value: v})
		}
		pod.Spec.Containers = []v1.Container{c}
		if work {
			pod.Spec.Volumes = []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}
		}
		return pod
	}
	tests := map[string]struct {
		pod  *v1.Pod
		want string
	}{
		"not a kubernetes-mode runner": {pod: runner(nil, false), want: ""},
		"kubernetes":                   {pod: runner(map[string]string{contract.HooksEnv: "/home/runner/k8s/index.js"}, true), want: "pinned with nodeName"},
		"kubernetes, kube-scheduler":   {pod: runner(map[string]string{contract.HooksEnv: "/home/runner/k8s/index.js", contract.UseKubeSchedulerEnv: "true"}, true), want: "required hostname affinity"},
		"kubernetes-novolume":          {pod: runner(map[string]string{contract.HooksEnv: "/home/runner/k8s-novolume/index.js"}, false), want: "not pinned"},
		"next hook, RWO":               {pod: runner(map[string]string{contract.HooksEnv: "/home/runner/k8s/index.js", contract.HookRWOEnv: "true"}, true), want: "RWO"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := HookMode(tc.pod)
			if (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
				t.Errorf("HookMode = %q, want it to say %q", got, tc.want)
			}
		})
	}
}

func FuzzParseResourceList(f *testing.F) {
	for _, s := range []string{"cpu=2,memory=4Gi", " cpu=500m , nvidia.com/gpu=1 ", "cpu=", "memory=-1Gi", "cpu=1,cpu=2", ",,", "hugepages-2Mi=4Mi", "cpu=1e3", "cpu=18446744073709551", "cpu=1,example.com/r=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rl, err := parseResourceList(s)
		if err != nil {
			return
		}
		if len(rl) == 0 {
			t.Fatalf("parseResourceList(%q) accepted an empty list", s)
		}
		for name, q := range rl {
			if n := contract.Scaled(name, q); n <= 0 || contract.CheckSize(name, q) != nil {
				t.Fatalf("parseResourceList(%q) accepted %s=%s, %d in the scheduler's units", s, name, q.String(), n)
			}
		}
		// What it prints, it reads back (the events and messages show it).
		again, err := parseResourceList(contract.FormatResources(rl))
		if err != nil {
			t.Fatalf("parseResourceList(%q) = %v, but its formatting %q does not parse: %v", s, rl, contract.FormatResources(rl), err)
		}
		if !equality.Semantic.DeepEqual(rl, again) {
			t.Fatalf("parseResourceList(%q) = %v, read back as %v", s, rl, again)
		}
	})
}

func FuzzHookTemplate(f *testing.F) {
	for _, s := range []string{
		sizingtest.HookTemplate,
		"spec:\n  containers:\n  - name: $job\n    resources:\n      limits: {cpu: \"2\"}\n",
		"spec:\n  containers:\n  - name: $job\n    resources:\n      requests: {cpu: \"-2\"}\n",
		"spec: [", "- a\n- b\n", "kind: Deployment\n", "",
		"spec:\n  overhead: {cpu: 100m}\n  initContainers:\n  - name: i\n    resources:\n      requests: {memory: 1Gi}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		tmpl, err := parseHookTemplate(data)
		if err != nil {
			return
		}
		for _, rl := range []v1.ResourceList{tmpl.workflow, tmpl.step} {
			for name, q := range rl {
				if n := contract.Scaled(name, q); n <= 0 || contract.CheckSize(name, q) != nil {
					t.Fatalf("template %q accepted with %s=%s, %d in the scheduler's units", data, name, q.String(), n)
				}
			}
		}
		// A step pod is the workflow pod without its services: never larger.
		w, st := contract.AmountFromList(tmpl.workflow), contract.AmountFromList(tmpl.step)
		if st.Sub(w).AtLeastZero().MilliCPU > 0 || st.Sub(w).AtLeastZero().Memory > 0 {
			t.Fatalf("template %q: step pod %s larger than the workflow pod %s", data, st, w)
		}
	})
}

func runnerPod(name string) *st.PodWrapper {
	return st.MakePod().Namespace("arc").Name(name).UID(name).Label("actions-ephemeral-runner", "True")
}
