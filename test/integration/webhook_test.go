package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/webhook"
)

// startWebhook serves tandem-webhook in-process on loopback and registers
// it with the apiserver (ValidatingWebhookConfiguration with its URL and
// CA bundle, failurePolicy Ignore); both go at the end of the test.
func (e *env) startWebhook() *webhook.Local {
	e.t.Helper()
	return e.startWebhookAs(e.client)
}

// startWebhookAs is startWebhook for a webhook that acts through client.
func (e *env) startWebhookAs(client kubernetes.Interface) *webhook.Local {
	e.t.Helper()
	return e.startWebhookWith(client, webhook.Options{})
}

// startWebhookWith is startWebhookAs with the webhook's options.
func (e *env) startWebhookWith(client kubernetes.Interface, opts webhook.Options) *webhook.Local {
	e.t.Helper()
	wh, err := webhook.StartLocal(e.ctx, client, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	name := "tandem-webhook-" + e.ns
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		if err := wh.Stop(); err != nil {
			e.t.Errorf("stopping the webhook: %v", err)
		}
	})
	if err := wh.Register(e.ctx, e.client, name, "", e.ns); err != nil {
		e.t.Fatal(err)
	}
	return wh
}

// placeholder creates the placeholder of runner incarnation uid on node, as
// tandem's leader does in reservationMode Pods (pkg/controllers/placeholder).
func (e *env) placeholder(runner string, uid types.UID, node, cpu string) *v1.Pod {
	e.t.Helper()
	return e.create(contract.PlaceholderName(runner), podSpec{
		cpu:         cpu,
		node:        node,
		labels:      map[string]string{contract.PlaceholderLabel: "true"},
		annotations: map[string]string{contract.PlaceholderOfAnnotation: runner},
		mutate: func(p *v1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: runner, UID: uid, Controller: ptr.To(true)}}
		},
	})
}

// heldRunner creates a runner pod of 1 cpu bound to node and its
// placeholder of cpu.
func (e *env) heldRunner(name, node, cpu string) (runner, hold *v1.Pod) {
	e.t.Helper()
	runner = e.create(name, podSpec{cpu: "1", runner: true, node: node})
	return runner, e.placeholder(runner.Name, runner.UID, node, cpu)
}

// gone reports whether the pod is not there (or another pod took its name).
func (e *env) gone(pod *v1.Pod) bool {
	e.t.Helper()
	got, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return got.UID != pod.UID
}

// The workflow pod of hooks v0.7.0, pinned to its runner's node with
// nodeName, bypasses every scheduler: tandem-webhook deletes the runner's
// placeholder while the pod is admitted, so Create returns with the
// placeholder gone, and a watch on the node's pods (the kubelet's) delivers
// the placeholder's deletion before the workflow pod.
func TestWebhookReleasesPlaceholderBeforePinnedWorkflowPod(t *testing.T) {
	const node = "webhook-n1"
	e := newEnvWithoutScheduler(t, map[string]string{node: "4"})
	wh := e.startWebhook()
	runner, hold := e.heldRunner("runner", node, "2")

	list, err := e.client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.client.CoreV1().Pods(e.ns).Watch(e.ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("spec.nodeName", node).String(),
		ResourceVersion: list.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	reviewed := wh.Handler().Reviewed()
	workflow := e.create("runner-workflow", podSpec{cpu: "2", node: node, workflowOf: runner.Name})
	if !e.gone(hold) {
		t.Fatalf("placeholder %s still there when the workflow pod's Create returned", hold.Name)
	}
	if got := wh.Handler().Reviewed(); got != reviewed+1 {
		t.Errorf("webhook reviewed %d pods for the workflow pod, want 1", got-reviewed)
	}

	var seen []string
	deleted := false
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed; events so far: %q", seen)
			}
			pod, isPod := ev.Object.(*v1.Pod)
			if !isPod {
				t.Fatalf("watch event %s of %T", ev.Type, ev.Object)
			}
			seen = append(seen, string(ev.Type)+" "+pod.Name+" rv "+pod.ResourceVersion)
			switch {
			case ev.Type == watch.Deleted && pod.UID == hold.UID:
				deleted = true
			case ev.Type == watch.Added && pod.UID == workflow.UID:
				if !deleted {
					t.Errorf("the node's watch delivered the workflow pod before the placeholder's deletion: %q", seen)
				}
				done = true
			}
		case <-timeout.C:
			t.Fatalf("no ADDED event for the workflow pod within 30s; events: %q", seen)
		}
	}
}

// What the webhook leaves alone: the placeholder of an older incarnation of
// the runner (same name, other UID), the placeholder when a pod without the
// runner-pod label is pinned to the node, and everything on a dry run.
func TestWebhookLeavesOtherPodsAlone(t *testing.T) {
	const node = "webhook-n2"
	e := newEnvWithoutScheduler(t, map[string]string{node: "8"})
	wh := e.startWebhook()

	t.Run("older runner incarnation", func(t *testing.T) {
		runner := e.create("old-runner", podSpec{cpu: "1", runner: true, node: node})
		hold := e.placeholder(runner.Name, "uid-of-an-earlier-incarnation", node, "1")
		reviewed := wh.Handler().Reviewed()
		e.create("old-runner-workflow", podSpec{cpu: "1", node: node, workflowOf: runner.Name})
		if got := wh.Handler().Reviewed(); got != reviewed+1 {
			t.Fatalf("webhook reviewed %d pods, want the workflow pod", got-reviewed)
		}
		if e.gone(hold) {
			t.Errorf("the placeholder of another incarnation of %s was deleted", runner.Name)
		}
	})

	t.Run("pod without the label", func(t *testing.T) {
		_, hold := e.heldRunner("plain-runner", node, "1")
		reviewed := wh.Handler().Reviewed()
		// Named like the runner's workflow pod, but not labelled.
		e.create("plain-runner-workflow", podSpec{cpu: "1", node: node})
		if got := wh.Handler().Reviewed(); got != reviewed {
			t.Errorf("webhook reviewed %d pods without the runner-pod label, want 0 (objectSelector)", got-reviewed)
		}
		if e.gone(hold) {
			t.Errorf("placeholder deleted for a pod without the runner-pod label")
		}
	})

	t.Run("dry run", func(t *testing.T) {
		runner, hold := e.heldRunner("dry-runner", node, "1")
		reviewed := wh.Handler().Reviewed()
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "dry-runner-workflow", Namespace: e.ns, Labels: map[string]string{"runner-pod": runner.Name}},
			Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "job", Image: "image"}}},
		}
		if _, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if got := wh.Handler().Reviewed(); got != reviewed+1 {
			t.Fatalf("webhook reviewed %d dry-run pods, want 1", got-reviewed)
		}
		if e.gone(hold) {
			t.Errorf("placeholder deleted on a dry run")
		}
	})
}

// With the webhook down (failurePolicy Ignore), a pinned workflow pod is
// still created: a webhook outage fails no pod creation. Its placeholder
// stays; removing it then is the job of tandem's fallback (the leader
// deletes a placeholder whose workflow pod it sees), not tested here: meanwhile
// a kubelet whose node is full would reject the pod.
func TestWebhookDownAllowsWorkflowPod(t *testing.T) {
	const node = "webhook-n3"
	e := newEnvWithoutScheduler(t, map[string]string{node: "4"})
	wh := e.startWebhook()
	runner, hold := e.heldRunner("runner", node, "2")
	if err := wh.Stop(); err != nil {
		t.Fatal(err)
	}
	workflow := e.create("runner-workflow", podSpec{cpu: "2", node: node, workflowOf: runner.Name})
	if workflow.Spec.NodeName != node {
		t.Errorf("workflow pod on %q, want %s", workflow.Spec.NodeName, node)
	}
	if e.gone(hold) {
		t.Errorf("placeholder deleted with the webhook down: something else deleted it")
	}
}

// The chart's Pods-mode objects are valid for the real apiserver (the
// webhook configuration's match condition compiles, the Secret is a valid
// TLS Secret): a dry-run server-side apply of all of them succeeds.
func TestChartPodsModeApplies(t *testing.T) {
	e := newEnvWithoutScheduler(t, nil)
	objs := renderChart(t, "--namespace", e.ns, "--set", "reservationMode=Pods", "--set", anySource, "--set", "fullnameOverride="+e.ns, "--set", "runnerNamespaces={"+e.ns+"}")
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
	}
	if !kinds["ValidatingWebhookConfiguration"] || !kinds["Secret"] {
		t.Fatalf("rendered kinds %v, want the webhook's", kinds)
	}
	apply(t, e.ctx, objs, metav1.ApplyOptions{FieldManager: "tandem-helm", DryRun: []string{metav1.DryRunAll}})
}

// The webhook as the chart installs it: acting as its ServiceAccount with
// only its rendered RBAC (a Role in the runner namespace) and its rendered
// --namespaces, it releases a placeholder before the pinned workflow pod is
// stored. The webhook's lookup became a list (placeholders are found by
// label, not by name), which the rendered ClusterRole did not grant: every
// review failed Forbidden and allowed the pod with the placeholder still on
// the node, and every test ran the webhook as admin. Then it became a watch
// of the runner namespaces, which needs both the verb and the flag.
func TestWebhookWithItsRenderedRBAC(t *testing.T) {
	const node = "webhook-rbac-n1"
	e := newEnvWithoutScheduler(t, map[string]string{node: "4"})
	var rbac []*unstructured.Unstructured
	var opts webhook.Options
	for _, o := range renderChart(t, "--namespace", e.ns, "--set", "reservationMode=Pods", "--set", anySource, "--set", "fullnameOverride="+e.ns, "--set", "runnerNamespaces={"+e.ns+"}") {
		if o.GetName() == e.ns+"-webhook" && slices.Contains([]string{"ServiceAccount", "Role", "RoleBinding"}, o.GetKind()) {
			rbac = append(rbac, o)
		}
		if o.GetName() == e.ns+"-webhook" && o.GetKind() == "Deployment" {
			opts = webhookOptionsOf(t, o)
		}
	}
	if len(opts.Namespaces) == 0 {
		t.Fatalf("the chart's webhook Deployment names no runner namespace (--namespaces): it would watch every namespace, with a Role in one")
	}
	if len(rbac) != 3 {
		t.Fatalf("the chart rendered %d of the webhook's ServiceAccount, Role and RoleBinding in the runner namespace", len(rbac))
	}
	applyServerSide(t, e.ctx, rbac, "tandem-test")
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + e.ns + ":" + e.ns + "-webhook",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + e.ns, "system:authenticated"},
	}
	asWebhook, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The authorizer reads RBAC from an informer: wait until the binding
	// applies (a get of no pod answers NotFound, not Forbidden).
	e.poll("the webhook's ServiceAccount is bound to its role", func() (bool, error) {
		_, err := asWebhook.CoreV1().Pods(e.ns).Get(e.ctx, "none", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	e.startWebhookWith(asWebhook, opts)
	runner, hold := e.heldRunner("runner", node, "2")
	e.create("runner-workflow", podSpec{cpu: "2", node: node, workflowOf: runner.Name})
	if !e.gone(hold) {
		t.Fatalf("placeholder %s still there when the workflow pod's Create returned: the webhook could not release it with its own rights", hold.Name)
	}
}

// Issue 37, hole 4: anyone who reaches the webhook's port (the NetworkPolicy
// admits any source unless the installer narrows it) can send it reviews
// of their own. Under a flood of forged reviews, pinned pods that name
// runners in an attacker's namespace, sent straight to the webhook from 16
// connections at up to 400 a second, every real pinned workflow pod still
// finds its runner's placeholder gone when its Create returns (the kubelet
// would otherwise reject it: the job fails). The flood must really happen:
// at least half its rate gets through.
func TestWebhookHoldsUnderLoad(t *testing.T) {
	const (
		node    = "webhook-load-n1"
		jobs    = 20
		workers = 16
		rate    = 400 // forged reviews a second, all workers together
	)
	e := newEnvWithoutScheduler(t, map[string]string{node: "64"})
	// As installed: watching the runner namespace (the chart's --namespaces).
	wh := e.startWebhookWith(e.client, webhook.Options{Namespaces: []string{e.ns}})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(wh.CABundle()) {
		t.Fatal("the webhook's CA bundle holds no certificate")
	}
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: workers,
	}}
	forgedReview := func(i int) []byte {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("forged-%d", i), Namespace: "mallory", Labels: map[string]string{"runner-pod": fmt.Sprintf("victim-%d", i%50)}},
			Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "main", Image: "image"}}},
		}
		raw, err := json.Marshal(pod)
		if err != nil {
			t.Error(err)
		}
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: types.UID(fmt.Sprintf("forged-%d", i)), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "mallory", Name: pod.Name,
				Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
			},
		})
		if err != nil {
			t.Error(err)
		}
		return body
	}
	ctx, stop := context.WithCancel(e.ctx)
	var sent, answered atomic.Int64
	var flood sync.WaitGroup
	start := time.Now()
	for w := range workers {
		flood.Go(func() {
			tick := time.NewTicker(time.Second * workers / rate)
			defer tick.Stop()
			for i := w; ; i += workers {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, wh.URL(), bytes.NewReader(forgedReview(i)))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				sent.Add(1)
				resp, err := httpClient.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					answered.Add(1)
				}
			}
		})
	}

	failed := 0
	for i := range jobs {
		runner, hold := e.heldRunner(fmt.Sprintf("r%d", i), node, "1")
		e.create(runner.Name+"-workflow", podSpec{cpu: "1", node: node, workflowOf: runner.Name})
		if !e.gone(hold) {
			failed++
			t.Errorf("placeholder %s still there when its runner's pinned workflow pod was stored", hold.Name)
		}
	}
	stop()
	flood.Wait()
	elapsed := time.Since(start).Seconds()
	t.Logf("%d jobs, %d failed; %d forged reviews sent in %.1fs (%.0f/s), %d answered 200", jobs, failed, sent.Load(), elapsed, float64(sent.Load())/elapsed, answered.Load())
	if got := float64(sent.Load()) / elapsed; got < rate/2 {
		t.Errorf("the flood reached %.0f reviews a second, want at least %d: it did not load the webhook", got, rate/2)
	}
}

// webhookOptionsOf reads the webhook's options from the args of its
// rendered Deployment.
func webhookOptionsOf(t *testing.T, deployment *unstructured.Unstructured) webhook.Options {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) != 1 {
		t.Fatalf("the webhook Deployment's containers: %v (%v)", containers, err)
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	var opts webhook.Options
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--namespaces="); ok {
			opts.Namespaces = strings.Split(v, ",")
		}
		if v, ok := strings.CutPrefix(a, "--runner-pod-label="); ok {
			opts.RunnerPodLabel = v
		}
	}
	return opts
}
