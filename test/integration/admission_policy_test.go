package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
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
	// Both policies: this one and podsAdmissionPolicy (on by default),
	// which guards the record.
	applyPolicies(t, e.ctx, renderChart(t, "--values", values), 4)

	mallory := impersonate(t, "mallory")
	tandemSA := impersonate(t, tandemServiceAccount)
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
	if _, err := tandemSA.CoreV1().Pods(e.ns).Create(e.ctx, own, metav1.CreateOptions{}); err != nil {
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

// tandemServiceAccount is the user name tandem-scheduler acts as, as
// renderChart installs it.
const tandemServiceAccount = "system:serviceaccount:" + releaseNamespace + ":" + releaseName

// applyPolicies applies the rendered chart's admission policies and their
// bindings (want objects of those kinds), deleted at the end of the test.
func applyPolicies(t testing.TB, ctx context.Context, rendered []*unstructured.Unstructured, want int) {
	t.Helper()
	var policy []*unstructured.Unstructured
	for _, o := range rendered {
		if k := o.GetKind(); k == "ValidatingAdmissionPolicy" || k == "ValidatingAdmissionPolicyBinding" {
			policy = append(policy, o)
		}
	}
	if len(policy) != want {
		t.Fatalf("the chart rendered %d admission policy objects, want %d", len(policy), want)
	}
	applyServerSide(t, ctx, policy, "tandem-test")
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
}

// The chart's podsAdmissionPolicy (on by default), applied as rendered, on
// the real apiserver, with tandem-scheduler acting as its service account:
// in a runner namespace a job (any user but tandem's) cannot create or
// change a pod marked as tandem's, nor drop a runner's controller
// reference; tandem's own pair pod still goes through; elsewhere nothing is
// checked.
func TestPodsAdmissionPolicy(t *testing.T) {
	e := newEnvWithoutScheduler(t, map[string]string{"pap-n1": "3"})
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("runnerNamespaces: ["+e.ns+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	applyPolicies(t, e.ctx, renderChart(t, "--values", values), 2)
	asTandem := rest.CopyConfig(restConfig)
	asTandem.Impersonate = rest.ImpersonationConfig{UserName: tandemServiceAccount, Groups: []string{"system:masters", "system:authenticated"}}
	e.config = tandemConfig()
	s, err := inprocess.Start(e.ctx, asTandem, e.config)
	if err != nil {
		t.Fatal(err)
	}
	e.sched = s

	job := impersonate(t, "system:serviceaccount:"+e.ns+":default")
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	marked := func(name string, labels, annotations map[string]string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: labels, Annotations: annotations},
			Spec:       v1.PodSpec{SchedulerName: "nobody", Containers: []v1.Container{{Name: "main", Image: "image"}}},
		}
	}
	var denied error
	err = wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, denied = job.CoreV1().Pods(e.ns).Create(ctx, marked("forged", map[string]string{contract.PlaceholderLabel: "true"}, nil), dryRun)
		return denied != nil, nil
	})
	if err != nil {
		t.Fatalf("a job may still create a placeholder: the policy never took effect")
	}
	wantContains(t, "the denial of a job's placeholder", denied.Error(), "only "+tandemServiceAccount+" may create or change", "system:serviceaccount:"+e.ns+":default may not")
	for what, pod := range map[string]*v1.Pod{
		"a pair pod":                          marked("forged-pair", map[string]string{contract.PairPodLabel: "false"}, nil),
		"a pod naming a runner it holds for":  marked("forged-of", nil, map[string]string{contract.PlaceholderOfAnnotation: "r1"}),
		"a pod naming a runner it stands for": marked("forged-pair-of", nil, map[string]string{contract.PairOfAnnotation: "r1"}),
	} {
		if _, err := job.CoreV1().Pods(e.ns).Create(e.ctx, pod, dryRun); err == nil {
			t.Errorf("a job created %s", what)
		}
	}
	patch := func(client kubernetes.Interface, name, body string, opts metav1.PatchOptions) error {
		_, err := client.CoreV1().Pods(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(body), opts)
		return err
	}
	plain, err := job.CoreV1().Pods(e.ns).Create(e.ctx, marked("plain", nil, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a job's ordinary pod was denied: %v", err)
	}
	if err := patch(job, plain.Name, `{"metadata":{"labels":{"`+contract.PlaceholderLabel+`":"true"}}}`, metav1.PatchOptions{}); err == nil {
		t.Error("a job made its pod a placeholder by a label")
	}

	// tandem's own: r2 waits for pair room, and its pair pod is created.
	e.runner("r1", "1", "1")
	e.bound("r1")
	e.runner("r2", "1", "1")
	pair := e.oneTandemPodOf(contract.PairPodLabel, contract.PairOfAnnotation, "r2").Name
	if err := patch(job, pair, `{"metadata":{"labels":{"team":"a"}}}`, metav1.PatchOptions{}); err == nil {
		t.Error("a job changed tandem's pair pod")
	}
	// The garbage collector's finalizers of foreground and orphan
	// deletion, on tandem's own pods too; not their labels.
	gc := impersonate(t, "system:serviceaccount:kube-system:generic-garbage-collector")
	dry := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	if err := patch(gc, pair, `{"metadata":{"finalizers":["foregroundDeletion"]}}`, dry); err != nil {
		t.Errorf("the garbage collector could not add its finalizer to tandem's pair pod: %v", err)
	}
	if err := patch(gc, pair, `{"metadata":{"labels":{"team":"a"}}}`, dry); err == nil {
		t.Error("the garbage collector changed the labels of tandem's pair pod")
	}

	// A runner's owner references: the garbage collector's, no job's.
	dropOwner := `{"metadata":{"ownerReferences":null}}`
	if err := patch(job, "r1", dropOwner, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
		t.Error("a job dropped runner r1's controller reference")
	} else {
		wantContains(t, "the denial of a dropped owner", err.Error(), "owner references may not be changed")
	}
	if err := patch(gc, "r1", dropOwner, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the garbage collector could not orphan runner r1: %v", err)
	}
	if err := patch(job, "r1", `{"metadata":{"annotations":{"`+contract.ReservationAnnotation+`":"{}"}}}`, metav1.PatchOptions{}); err == nil {
		t.Error("a job changed runner r1's record")
	}
	if err := patch(job, "r1", `{"metadata":{"labels":{"team":"a"}}}`, metav1.PatchOptions{}); err != nil {
		t.Errorf("a label change on a runner was denied: %v", err)
	}

	// Outside the runner namespaces the policy checks nothing (and tandem
	// takes nothing there for its own: TestPodsLabelledAsTandemsElsewhereAreLeftAlone).
	elsewhere := e.ns + "-other"
	if err := controlplane.EnsureNamespace(e.ctx, e.client, elsewhere); err != nil {
		t.Fatal(err)
	}
	outside := marked("outside", map[string]string{contract.PlaceholderLabel: "true"}, nil)
	outside.Namespace = elsewhere
	if _, err := job.CoreV1().Pods(elsewhere).Create(e.ctx, outside, dryRun); err != nil {
		t.Errorf("a placeholder-labelled pod outside the runner namespaces was denied: %v", err)
	}
}

// impersonate is a client that acts as user, with the admin's rights (the
// policy, not RBAC, is under test).
func impersonate(t testing.TB, user string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// The chart's podsAdmissionPolicy on the real apiserver, with real service
// account tokens: a pod labelled with a runner's name (runner-pod=<B>) is
// B's workflow or step pod, and in a runner namespace only a token bound to
// B's own pod may create one or give a pod that label. The hooks create
// those pods from the runner's container, with its token; a job of runner
// A, which has A's token and the pod rights of ARC's kube-mode role, can
// neither create a pod for B nor relabel its own, and a token of the
// namespace's service account bound to no pod labels none. Pods of A's
// with A's token, unrelated changes and administrators are left alone.
func TestRunnerLabelNeedsTheRunnersToken(t *testing.T) {
	e := newEnvWithoutScheduler(t, map[string]string{"rl-n1": "3"})
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("runnerNamespaces: ["+e.ns+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	applyPolicies(t, e.ctx, renderChart(t, "--values", values), 2)

	// ARC's kube-mode service account, with the pod rights of its role.
	const sa = "runner"
	if _, err := e.client.CoreV1().ServiceAccounts(e.ns).Create(e.ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.RbacV1().Roles(e.ns).Create(e.ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "create", "delete", "update", "patch"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "create", "delete"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.RbacV1().RoleBindings(e.ns).Create(e.ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: e.ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, runner string) *v1.Pod {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
			Spec:       v1.PodSpec{ServiceAccountName: sa, SchedulerName: "nobody", Containers: []v1.Container{{Name: "main", Image: "image"}}},
		}
		if runner != "" {
			p.Labels = map[string]string{"runner-pod": runner}
		}
		return p
	}
	runners := map[string]*v1.Pod{}
	for _, name := range []string{"a", "b"} {
		p, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod(name, ""), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runners[name] = p
	}
	// A client with a token of the service account, bound to pod (none: to
	// no object).
	as := func(p *v1.Pod) kubernetes.Interface {
		t.Helper()
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
		if p != nil {
			req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}
		}
		tr, err := e.client.CoreV1().ServiceAccounts(e.ns).CreateToken(e.ctx, sa, req, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token request: %v", err)
		}
		cfg := rest.AnonymousClientConfig(restConfig)
		cfg.BearerToken = tr.Status.Token
		return kubernetes.NewForConfigOrDie(cfg)
	}
	asA, asB, unbound := as(runners["a"]), as(runners["b"]), as(nil)
	user := "system:serviceaccount:" + e.ns + ":" + sa
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	// A's job makes B's workflow pod: denied, once the policy took effect.
	var denied error
	if err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, denied = asA.CoreV1().Pods(e.ns).Create(ctx, pod("b-wf", "b"), dryRun)
		return denied != nil, nil
	}); err != nil {
		t.Fatal("a job of runner a created runner b's workflow pod: the policy never took effect")
	}
	wantContains(t, "the denial of a's pod labelled b", denied.Error(), "a pod labelled runner-pod=b is runner b's", user+" from pod a may not")
	if _, err := unbound.CoreV1().Pods(e.ns).Create(e.ctx, pod("b-wf", "b"), dryRun); err == nil {
		t.Error("a token bound to no pod created runner b's workflow pod")
	} else {
		wantContains(t, "the denial of an unbound token", err.Error(), user+" without a token bound to a pod may not")
	}

	// Each runner's hook makes its own; so may an administrator.
	wf, err := asA.CoreV1().Pods(e.ns).Create(e.ctx, pod("a-wf", "a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("runner a's hook could not create a's workflow pod: %v", err)
	}
	if _, err := asB.CoreV1().Pods(e.ns).Create(e.ctx, pod("b-wf", "b"), dryRun); err != nil {
		t.Errorf("runner b's hook could not create b's workflow pod: %v", err)
	}
	if _, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod("b-admin", "b"), dryRun); err != nil {
		t.Errorf("an administrator could not create a pod labelled b: %v", err)
	}

	// A's job relabels its pods as b's: denied; other changes pass.
	patch := func(client kubernetes.Interface, name, body string) error {
		_, err := client.CoreV1().Pods(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	if err := patch(asA, wf.Name, `{"metadata":{"labels":{"runner-pod":"b"}}}`); err == nil {
		t.Error("a job of runner a relabelled a's workflow pod as b's")
	}
	plain, err := asA.CoreV1().Pods(e.ns).Create(e.ctx, pod("plain", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a job's ordinary pod was denied: %v", err)
	}
	if err := patch(asA, plain.Name, `{"metadata":{"labels":{"runner-pod":"b"}}}`); err == nil {
		t.Error("a job of runner a labelled its ordinary pod as b's")
	}
	if err := patch(asA, wf.Name, `{"metadata":{"annotations":{"note":"x"}}}`); err != nil {
		t.Errorf("a change that leaves the runner label alone was denied: %v", err)
	}
	if err := patch(asA, wf.Name, `{"metadata":{"labels":{"runner-pod":null}}}`); err != nil {
		t.Errorf("removing the runner label was denied: %v", err)
	}
	// A controller outside the namespace (the Job controller makes a step
	// Job's pods) is not one of its jobs: its pods are left alone.
	if _, err := impersonate(t, "system:serviceaccount:kube-system:job-controller").CoreV1().Pods(e.ns).Create(e.ctx, pod("b-step", "b"), dryRun); err != nil {
		t.Errorf("the Job controller could not create a pod labelled b: %v", err)
	}

	// Jobs: hooks v0.7.0 label their step Jobs with the runner's name, and
	// a Job's pods carry its template's labels.
	job := func(label, template string) *batchv1.Job {
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "step", Namespace: e.ns},
			Spec: batchv1.JobSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
				SchedulerName: "nobody", Containers: []v1.Container{{Name: "main", Image: "image"}}}}},
		}
		if label != "" {
			j.Labels = map[string]string{"runner-pod": label}
		}
		if template != "" {
			j.Spec.Template.Labels = map[string]string{"runner-pod": template}
		}
		return j
	}
	if _, err := asA.BatchV1().Jobs(e.ns).Create(e.ctx, job("a", ""), dryRun); err != nil {
		t.Errorf("runner a's hook could not create a's step Job: %v", err)
	}
	if _, err := asA.BatchV1().Jobs(e.ns).Create(e.ctx, job("b", ""), dryRun); err == nil {
		t.Error("a job of runner a created a step Job labelled b")
	} else {
		wantContains(t, "the denial of a's Job labelled b", err.Error(), "a Job labelled runner-pod=b is runner b's", user+" from pod a may not")
	}
	// (A Job without labels takes its template's: one labelled a's.)
	if _, err := asA.BatchV1().Jobs(e.ns).Create(e.ctx, job("a", "b"), dryRun); err == nil {
		t.Error("a job of runner a created a Job whose pods are labelled b")
	} else {
		wantContains(t, "the denial of a's Job making b's pods", err.Error(), "a Job whose pods are labelled runner-pod=b", user+" from pod a may not")
	}
}
