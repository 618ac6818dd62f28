package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tandem-scheduler/tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/pkg/controlplane"
)

// arcController is the user name ARC's controller acts as in the chart's
// default runnerAdmissionPolicy.runnerCreators.
const arcController = "system:serviceaccount:arc-systems:arc-gha-rs-controller"

// The chart's runnerAdmissionPolicy, applied as rendered, on the real
// apiserver's ValidatingAdmissionPolicy admission: in a runner namespace only
// ARC's controller creates runner pods, nobody writes or changes tandem's
// record on a pod, and the Binding that writes it still goes through.
// Everything else (ordinary pods, pods of other schedulers, other
// namespaces) is left alone.
func TestRunnerAdmissionPolicy(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"ap-n1": "4"})
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("runnerNamespaces: ["+e.ns+"]\nrunnerAdmissionPolicy:\n  enabled: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var policy []*unstructured.Unstructured
	for _, o := range renderChart(t, "--values", values) {
		if k := o.GetKind(); k == "ValidatingAdmissionPolicy" || k == "ValidatingAdmissionPolicyBinding" {
			policy = append(policy, o)
		}
	}
	if len(policy) != 2 {
		t.Fatalf("the chart rendered %d admission policy objects, want the policy and its binding", len(policy))
	}
	applyServerSide(t, e.ctx, policy, "tandem-test")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		dyn := dynamic.NewForConfigOrDie(restConfig)
		for _, o := range policy {
			resource := map[string]string{
				"ValidatingAdmissionPolicy":        "validatingadmissionpolicies",
				"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
			}[o.GetKind()]
			gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: resource}
			if err := dyn.Resource(gvr).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})

	mallory := impersonate(t, "mallory")
	arc := impersonate(t, arcController)
	runnerPod := func(name string, annotations map[string]string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: annotations,
				Labels: map[string]string{"actions-ephemeral-runner": "True"}},
			Spec: v1.PodSpec{SchedulerName: schedulerName, RestartPolicy: v1.RestartPolicyNever,
				Containers: []v1.Container{{Name: "main", Image: "image"}}},
		}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	// The policy takes effect once the apiserver has loaded it.
	var denied error
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, denied = mallory.CoreV1().Pods(e.ns).Create(ctx, runnerPod("forged", nil), dryRun)
		return denied != nil, nil
	})
	if err != nil {
		t.Fatalf("mallory may still create a runner pod: the policy never took effect")
	}
	wantContains(t, "the denial of mallory's runner", denied.Error(), "only "+arcController+" may create runner pods", "mallory may not")

	// What the policy leaves alone.
	plain := runnerPod("plain", nil)
	delete(plain.Labels, "actions-ephemeral-runner")
	if _, err := mallory.CoreV1().Pods(e.ns).Create(e.ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Errorf("mallory's ordinary tandem pod was denied: %v", err)
	}
	other := runnerPod("other-scheduler", nil)
	other.Spec.SchedulerName = "default-scheduler"
	if _, err := mallory.CoreV1().Pods(e.ns).Create(e.ctx, other, dryRun); err != nil {
		t.Errorf("a runner-labelled pod of another scheduler was denied: %v", err)
	}
	elsewhere := e.ns + "-other"
	if err := controlplane.EnsureNamespace(e.ctx, e.client, elsewhere); err != nil {
		t.Fatal(err)
	}
	outside := runnerPod("outside", nil)
	outside.Namespace = elsewhere
	if _, err := mallory.CoreV1().Pods(elsewhere).Create(e.ctx, outside, dryRun); err != nil {
		t.Errorf("a runner pod outside the runner namespaces was denied: %v", err)
	}

	// A pod with tandem's own placeholder label is no runner to the policy,
	// whatever the selector matches, because it is none to the plugin either
	// (Profile.IsRunner): tandem creates its placeholders and pair pods in
	// the runner namespaces, and a broad runnerSelector must not deny them.
	// Such a pod is admitted and scheduled as an ordinary pod, with no record.
	own := runnerPod("own-label", map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1"})
	own.Labels[contract.PlaceholderLabel] = "true"
	if _, err := mallory.CoreV1().Pods(e.ns).Create(e.ctx, own, metav1.CreateOptions{}); err != nil {
		t.Errorf("a pod with tandem's placeholder label was denied: %v", err)
	} else {
		e.bound("own-label")
		if _, ok, _ := contract.RecordedReservation(e.get("own-label")); ok {
			t.Errorf("a runner-labelled pod with tandem's placeholder label was bound with a record: tandem took it for a runner")
		}
	}

	// ARC's runner is admitted, scheduled and bound with its record: the
	// Binding is not an update the policy sees.
	r1 := runnerPod("r1", map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1"})
	e.ownedByEphemeralRunner(r1)
	if _, err := arc.CoreV1().Pods(e.ns).Create(e.ctx, r1, metav1.CreateOptions{}); err != nil {
		t.Fatalf("ARC's runner was denied: %v", err)
	}
	if node := e.bound("r1"); node != "ap-n1" {
		t.Fatalf("ARC's runner landed on %q, want ap-n1", node)
	}
	if node, cpu, _ := e.recordedReservation("r1"); node != "ap-n1" || cpu != "1" {
		t.Errorf("r1's record = cpu %s on %s, want cpu 1 on ap-n1", cpu, node)
	}

	// Nobody writes a record: not at create, not by a change, not even ARC.
	for _, c := range []struct {
		who    string
		client kubernetes.Interface
	}{{"mallory", mallory}, {"ARC", arc}} {
		forged := runnerPod("recorded-"+strings.ToLower(c.who), map[string]string{contract.ReservationAnnotation: `{"node":"ap-n1"}`})
		delete(forged.Labels, "actions-ephemeral-runner")
		_, err := c.client.CoreV1().Pods(e.ns).Create(e.ctx, forged, dryRun)
		if err == nil {
			t.Errorf("%s created a pod that carries %s", c.who, contract.ReservationAnnotation)
		} else {
			wantContains(t, "the denial of a recorded pod", err.Error(), "may not be created with")
		}
	}
	patch := func(client kubernetes.Interface, name, body string) error {
		_, err := client.CoreV1().Pods(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	if err := patch(mallory, "r1", `{"metadata":{"annotations":{"`+contract.ReservationAnnotation+`":"{}"}}}`); err == nil {
		t.Errorf("mallory changed r1's record")
	} else {
		wantContains(t, "the denial of a changed record", err.Error(), "may not be changed")
	}
	if err := patch(mallory, "r1", `{"metadata":{"annotations":{"`+contract.ReservationAnnotation+`":null}}}`); err == nil {
		t.Errorf("mallory removed r1's record")
	}
	if node, _, _ := e.recordedReservation("r1"); node != "ap-n1" {
		t.Errorf("r1's record names %q after the denied patches, want ap-n1", node)
	}
	// Other changes to a runner that exists stay allowed (ARC and the
	// garbage collector update their own metadata).
	if err := patch(mallory, "r1", `{"metadata":{"labels":{"team":"a"}}}`); err != nil {
		t.Errorf("a label change on ARC's runner was denied: %v", err)
	}
	// A pod does not become a runner by a label.
	if err := patch(mallory, "plain", `{"metadata":{"labels":{"actions-ephemeral-runner":"True"}}}`); err == nil {
		t.Errorf("mallory turned an ordinary pod into a runner by a label")
	} else {
		wantContains(t, "the denial of a relabelled pod", err.Error(), "mallory may not")
	}
}

// impersonate is a client that acts as user, with the admin's rights (the
// policy, not RBAC, is under test).
func impersonate(t *testing.T, user string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
