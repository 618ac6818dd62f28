package bench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/sim/arc"
)

func runner(name string, mode arc.HookMode) *v1.Pod {
	return st.MakePod().Namespace("ns").Name(name).
		Labels(map[string]string{RoleLabel: RoleRunner, HookLabel: string(mode)}).
		Annotation(contract.WorkflowRequestsAnnotation, "cpu=2,memory=4Gi").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "500m"}).Obj()
}

func TestHook(t *testing.T) {
	hostnameAffinity := &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"node-1"}}},
		}}},
	}}
	tests := map[string]struct {
		mode         arc.HookMode
		wantNodeName string
		wantAffinity *v1.Affinity
		wantLabels   map[string]string
	}{
		"nodeName": {
			mode:         arc.HookNodeName,
			wantNodeName: "node-1",
			wantLabels:   map[string]string{arc.RunnerPodLabel: "r", RoleLabel: RoleWorkflow},
		},
		"kube-scheduler": {
			mode:         arc.HookKubeScheduler,
			wantAffinity: hostnameAffinity,
			wantLabels:   map[string]string{arc.RunnerPodLabel: "r", RoleLabel: RoleWorkflow, MeasuredLabel: "true"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := fake.NewClientset()
			stop, err := StartHook(ctx, client)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			pods := client.CoreV1().Pods("ns")

			r, err := pods.Create(ctx, runner("r", tc.mode), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r.Spec.NodeName = "node-1"
			if _, err := pods.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			var wf *v1.Pod
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
				wf, err = pods.Get(ctx, arc.WorkflowPodName("r"), metav1.GetOptions{})
				return err == nil, nil
			}); err != nil {
				t.Fatalf("no workflow pod created: %v", err)
			}
			if diff := cmp.Diff(tc.wantLabels, wf.Labels); diff != "" {
				t.Errorf("labels (-want,+got):\n%s", diff)
			}
			if wf.Spec.NodeName != tc.wantNodeName {
				t.Errorf("nodeName = %q, want %q", wf.Spec.NodeName, tc.wantNodeName)
			}
			if diff := cmp.Diff(tc.wantAffinity, wf.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-want,+got):\n%s", diff)
			}
			wantRequests := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}
			if diff := cmp.Diff(wantRequests, wf.Spec.Containers[0].Resources.Requests); diff != "" {
				t.Errorf("requests (-want,+got):\n%s", diff)
			}
			for _, vol := range wf.Spec.Volumes {
				if vol.PersistentVolumeClaim != nil {
					t.Errorf("volume %s is a PVC; the benchmark has none", vol.Name)
				}
			}

			// The job ends: the workflow pod goes, then the hook deletes the runner.
			if err := pods.Delete(ctx, wf.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := pods.Get(ctx, "r", metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			}); err != nil {
				t.Fatalf("runner not deleted after its workflow pod: %v", err)
			}
		})
	}
}

// A runner without the hook label, or not bound, gets no workflow pod; a
// deleted runner takes its workflow pod along.
func TestHookIgnoresAndFinishes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	stop, err := StartHook(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pods := client.CoreV1().Pods("ns")

	plain := runner("plain", "")
	delete(plain.Labels, HookLabel)
	plain.Spec.NodeName = "node-1"
	pending := runner("pending", arc.HookNodeName)
	bound := runner("bound", arc.HookNodeName)
	bound.Spec.NodeName = "node-2"
	for _, p := range []*v1.Pod{plain, pending, bound} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, arc.WorkflowPodName("bound"), metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("a runner created bound got no workflow pod: %v", err)
	}
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, arc.WorkflowPodName("bound"), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("workflow pod left after its runner was deleted: %v", err)
	}
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"pending", "plain"}, names); diff != "" {
		t.Errorf("pods (-want,+got):\n%s", diff)
	}
}

// A create or delete the apiserver refused is retried: a workflow pod never
// created would hold its workload's barrier until the timeout.
func TestHookRetries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	// The hook's calls, and only those: its create of the workflow pod,
	// its delete of the runner.
	failures := map[string]int{"create": 2, "delete": 2}
	var mu sync.Mutex
	for verb := range failures {
		client.PrependReactor(verb, "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
			var name string
			switch a := action.(type) {
			case k8stesting.CreateAction:
				name = a.GetObject().(*v1.Pod).Name
			case k8stesting.DeleteAction:
				name = a.GetName()
			}
			mu.Lock()
			defer mu.Unlock()
			hooks := map[string]string{"create": arc.WorkflowPodName("r"), "delete": "r"}
			if action.GetSubresource() != "" || name != hooks[verb] || failures[verb] == 0 {
				return false, nil, nil
			}
			failures[verb]--
			return true, nil, apierrors.NewTooManyRequests("try again", 0)
		})
	}
	stop, err := StartHook(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pods := client.CoreV1().Pods("ns")
	r := runner("r", arc.HookNodeName)
	r.Spec.NodeName = "node-1"
	if _, err := pods.Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, arc.WorkflowPodName("r"), metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("no workflow pod after two refused creates: %v", err)
	}
	if err := pods.Delete(ctx, arc.WorkflowPodName("r"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, "r", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("runner not deleted after two refused deletes: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failures["create"] != 0 || failures["delete"] != 0 {
		t.Errorf("refusals left %v, want every one met", failures)
	}
}

func TestParseRequests(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    v1.ResourceList
		wantErr bool
	}{
		"cpu and memory": {in: "cpu=2, memory=4Gi", want: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}},
		"empty":          {in: "", wantErr: true},
		"no quantity":    {in: "cpu", wantErr: true},
		"bad quantity":   {in: "cpu=two", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseRequests(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
