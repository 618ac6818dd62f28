package arc

import (
	"math/rand"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
)

func TestStepName(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for runner, wantPrefix := range map[string]string{
		"set-bcdfg-runner-xz245": "set-bcdfg-runner-xz245-step-",
		longRunner:               longRunner[:49] + "-step-",
	} {
		got := StepName(runner, r)
		if !regexp.MustCompile("^" + regexp.QuoteMeta(wantPrefix) + "[0-9a-f]{8}$").MatchString(got) {
			t.Errorf("StepName(%q) = %q, want %q + 8 hex digits", runner, got, wantPrefix)
		}
		if len(got) > 63 {
			t.Errorf("StepName(%q) = %q: %d characters, more than 63", runner, got, len(got))
		}
	}
}

// The template of the mixed scenario's sets: a $job size, a service size
// (not in a step pod), a sidecar (in both), a schedulerName, a label.
const stepTemplate = `
metadata:
  labels: {team: ci}
  annotations: {owner: platform}
spec:
  schedulerName: tandem-scheduler
  containers:
  - name: $job
    resources: {requests: {cpu: "2", memory: 4Gi}}
  - name: $redis
    resources: {requests: {cpu: 500m}}
  - name: proxy
    image: proxy
    resources: {requests: {cpu: 250m}}
`

func TestStepJob(t *testing.T) {
	runner := boundRunner("set-bcdfg-runner-xz245")
	tests := map[string]struct {
		mode         HookMode
		wantNodeName string
		wantAffinity *v1.Affinity
	}{
		"v0.7.0: pinned with nodeName":                      {mode: HookNodeName, wantNodeName: "node-1"},
		"v0.7.0 kube-scheduler: required hostname affinity": {mode: HookKubeScheduler, wantAffinity: hostnameAffinity("node-1")},
		"next hook: preferred hostname affinity":            {mode: HookNextPreferred, wantAffinity: preferredAffinity("node-1")},
		"next hook RWO: required hostname affinity":         {mode: HookNextRWO, wantAffinity: hostnameAffinity("node-1")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			job, err := StepJob(runner, tc.mode, stepTemplate, Step{Image: "node:22"}, "set-bcdfg-runner-xz245-step-0a1b2c3d")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]string{RunnerPodLabel: runner.Name, "team": "ci"}, job.Labels); diff != "" {
				t.Errorf("Job labels (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{"team": "ci"}, job.Spec.Template.Labels); diff != "" {
				t.Errorf("pod template labels (-want,+got): the runner-pod label is on the Job only\n%s", diff)
			}
			if job.Annotations["owner"] != "platform" || job.Spec.Template.Annotations["owner"] != "platform" {
				t.Errorf("template annotations not on the Job and its pod template: %v, %v", job.Annotations, job.Spec.Template.Annotations)
			}
			if got := job.Spec.BackoffLimit; got == nil || *got != 0 {
				t.Errorf("backoffLimit = %v, want 0", got)
			}
			if got := job.Spec.TTLSecondsAfterFinished; got == nil || *got != 300 {
				t.Errorf("ttlSecondsAfterFinished = %v, want 300", got)
			}
			spec := job.Spec.Template.Spec
			if spec.NodeName != tc.wantNodeName {
				t.Errorf("nodeName = %q, want %q", spec.NodeName, tc.wantNodeName)
			}
			if diff := cmp.Diff(tc.wantAffinity, spec.Affinity); diff != "" {
				t.Errorf("affinity (-want,+got):\n%s", diff)
			}
			if spec.SchedulerName != "tandem-scheduler" || spec.RestartPolicy != v1.RestartPolicyNever {
				t.Errorf("schedulerName %q, restartPolicy %q; want the template's and Never", spec.SchedulerName, spec.RestartPolicy)
			}
			if diff := cmp.Diff(claimVolume(runner.Name+"-work"), spec.Volumes); diff != "" {
				t.Errorf("volumes (-want,+got):\n%s", diff)
			}
			// The step pod is the workflow pod without its services: $job
			// and the sidecar, not $redis.
			var names []string
			for _, c := range spec.Containers {
				names = append(names, c.Name)
			}
			if diff := cmp.Diff([]string{JobContainer, "proxy"}, names); diff != "" {
				t.Errorf("containers (-want,+got):\n%s", diff)
			}
			req := resourcehelper.PodRequests(&v1.Pod{Spec: spec}, resourcehelper.PodResourcesOptions{})
			if got := req.Cpu().String(); got != "2250m" {
				t.Errorf("step pod cpu = %s, want 2250m", got)
			}
		})
	}
	if _, err := StepJob(runner, HookNoVolume, "", Step{}, "x"); err == nil {
		t.Error("StepJob for novolume: want an error, hooks v0.8 run bare step pods")
	}
}

func TestStepPod(t *testing.T) {
	runner := boundRunner("r")
	pod, err := StepPod(runner, HookNoVolume, stepTemplate, Step{Image: "node:22"}, "r-step-0a1b2c3d")
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "r-step-0a1b2c3d" || pod.Namespace != "arc" {
		t.Errorf("pod %s/%s, want arc/r-step-0a1b2c3d", pod.Namespace, pod.Name)
	}
	if diff := cmp.Diff(map[string]string{RunnerPodLabel: "r", "team": "ci"}, pod.Labels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	if pod.Spec.NodeName != "" || pod.Spec.Affinity != nil {
		t.Errorf("step pod pinned (nodeName %q, affinity %v); hooks v0.8 do not pin it", pod.Spec.NodeName, pod.Spec.Affinity)
	}
	var volumes []string
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil {
			t.Errorf("volume %s is not an emptyDir", v.Name)
		}
		volumes = append(volumes, v.Name)
	}
	if diff := cmp.Diff([]string{"externals", "github", WorkVolume}, volumes); diff != "" {
		t.Errorf("volumes (-want,+got):\n%s", diff)
	}
	if c := pod.Spec.Containers[0]; c.Name != JobContainer || c.Resources.Requests.Cpu().String() != "2" || len(pod.Spec.Containers) != 2 {
		t.Errorf("containers = %+v, want job with $job's requests and the sidecar", pod.Spec.Containers)
	}
	if _, err := StepPod(runner, HookNodeName, "", Step{}, "x"); err == nil {
		t.Error("StepPod for v0.7.0: want an error, hooks v0.7.0 run step Jobs")
	}
}

func TestJobPod(t *testing.T) {
	job, err := StepJob(boundRunner("r"), HookNodeName, stepTemplate, Step{}, "r-step-0a1b2c3d")
	if err != nil {
		t.Fatal(err)
	}
	// What the apiserver adds to the template of a Job without a manual selector.
	job.UID = "job-uid"
	job.Spec.Template.Labels["batch.kubernetes.io/job-name"] = job.Name
	job.Spec.Template.Labels["batch.kubernetes.io/controller-uid"] = string(job.UID)
	pod := JobPod(job)
	if pod.GenerateName != "r-step-0a1b2c3d-" || pod.Name != "" {
		t.Errorf("name %q, generateName %q; want the Job's name and a generated suffix", pod.Name, pod.GenerateName)
	}
	want := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: types.UID("job-uid"), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if diff := cmp.Diff(want, pod.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want,+got):\n%s", diff)
	}
	if _, ok := pod.Labels[RunnerPodLabel]; ok || pod.Labels["batch.kubernetes.io/job-name"] != job.Name || pod.Labels["team"] != "ci" {
		t.Errorf("labels = %v, want the template's (no runner-pod)", pod.Labels)
	}
	if diff := cmp.Diff(job.Spec.Template.Spec, pod.Spec); diff != "" {
		t.Errorf("spec (-want,+got):\n%s", diff)
	}
}

func TestFinishedJobStatus(t *testing.T) {
	start := time.Unix(100, 0)
	types := func(s batchv1.JobStatus) []batchv1.JobConditionType {
		var out []batchv1.JobConditionType
		for _, c := range s.Conditions {
			out = append(out, c.Type)
		}
		return out
	}
	ok := FinishedJobStatus(true, start, start.Add(time.Minute))
	if diff := cmp.Diff([]batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete}, types(ok)); diff != "" || ok.Succeeded != 1 || ok.CompletionTime == nil {
		t.Errorf("succeeded: %+v", ok)
	}
	failed := FinishedJobStatus(false, start, start.Add(time.Minute))
	if diff := cmp.Diff([]batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobFailed}, types(failed)); diff != "" || failed.Failed != 1 || failed.CompletionTime != nil {
		t.Errorf("failed: %+v", failed)
	}
}
