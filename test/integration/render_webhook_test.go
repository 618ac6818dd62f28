package integration

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/pkg/webhook"
)

// kustomizePods is the kustomization of reservationMode Pods.
const kustomizePods = "manifests/kustomize/pods"

const (
	webhookName       = releaseName + "-webhook"
	webhookDeployment = "Deployment/" + releaseNamespace + "/" + webhookName
	webhookConfigKey  = "ValidatingWebhookConfiguration//" + webhookName
	webhookSecretKey  = "Secret/" + releaseNamespace + "/" + webhookName + "-tls"
	webhookPolicyKey  = "NetworkPolicy/" + releaseNamespace + "/" + webhookName
)

// anySource is the chart value that admits any source to the webhook: a
// render of reservationMode Pods needs it or webhook.networkPolicy.from
// (TestWebhookNetworkPolicy).
const anySource = "webhook.networkPolicy.allowAnySource=true"

// Issue 20: tandem-webhook authenticates no caller, so a NetworkPolicy
// admits traffic to its pods on the HTTPS port only, and only from the
// sources given; the Deployment's pods are the ones it selects. Issue 37:
// the policy admitted any source unless the installer narrowed it, so every
// pod of the cluster (every CI job) could flood the webhook with forged
// reviews; now the chart does not render Pods mode until the installer says
// where the kube-apiserver connects from, or that any source may. (The
// local control plane runs no CNI plugin: this checks what is installed,
// not its enforcement.)
func TestWebhookNetworkPolicy(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("webhook:\n  networkPolicy:\n    from: [{ipBlock: {cidr: 10.0.0.0/24}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"any source, said so": {"--set", "reservationMode=Pods", "--set", anySource},
		"from the CIDR":       {"--set", "reservationMode=Pods", "--values", values},
	} {
		t.Run(name, func(t *testing.T) {
			objs := byKey(renderChart(t, args...))
			policy := object[networkingv1.NetworkPolicy](t, objs, webhookPolicyKey)
			pods := object[appsv1.Deployment](t, objs, webhookDeployment).Spec.Template
			selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
			if err != nil || !selector.Matches(labels.Set(pods.Labels)) {
				t.Errorf("the policy selects %v, not the webhook pods %v (%v)", policy.Spec.PodSelector, pods.Labels, err)
			}
			if !slices.Equal(policy.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(policy.Spec.Ingress) != 1 {
				t.Fatalf("policy %+v, want one ingress rule", policy.Spec)
			}
			rule := policy.Spec.Ingress[0]
			if len(rule.Ports) != 1 || rule.Ports[0].Port.IntValue() != int(pods.Spec.Containers[0].Ports[0].ContainerPort) {
				t.Errorf("ports %v, want only the webhook's %d", rule.Ports, pods.Spec.Containers[0].Ports[0].ContainerPort)
			}
			var from []string
			for _, peer := range rule.From {
				if peer.IPBlock != nil {
					from = append(from, peer.IPBlock.CIDR)
				}
			}
			if want := map[string][]string{"any source, said so": nil, "from the CIDR": {"10.0.0.0/24"}}[name]; !slices.Equal(from, want) || len(rule.From) != len(want) {
				t.Errorf("from %v, want %v", rule.From, want)
			}
		})
	}
	if _, ok := byKey(renderChart(t, "--set", "reservationMode=Pods", "--set", "webhook.networkPolicy.enabled=false"))[webhookPolicyKey]; ok {
		t.Error("networkPolicy.enabled=false renders the policy")
	}
	// The ServiceMonitor scrapes the webhook on the same port: with `from`
	// set, Prometheus must be named too (metricsFrom), in a rule of its own.
	monitored := filepath.Join(t.TempDir(), "monitored.yaml")
	if err := os.WriteFile(monitored, []byte("metrics: {serviceMonitor: {enabled: true}}\nwebhook:\n  networkPolicy:\n    from: [{ipBlock: {cidr: 10.0.0.0/24}}]\n    metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := object[networkingv1.NetworkPolicy](t, byKey(renderChart(t, "--set", "reservationMode=Pods", "--values", monitored)), webhookPolicyKey)
	if len(policy.Spec.Ingress) != 2 || len(policy.Spec.Ingress[1].From) != 1 || policy.Spec.Ingress[1].From[0].NamespaceSelector == nil {
		t.Errorf("with a ServiceMonitor and metricsFrom: ingress %+v, want the apiserver's rule and Prometheus's", policy.Spec.Ingress)
	}
	for name, args := range map[string][]string{
		"a ServiceMonitor, from, no metricsFrom": {"--set", "reservationMode=Pods", "--values", values, "--set", "metrics.serviceMonitor.enabled=true"},
		"neither from nor allowAnySource":        {"--set", "reservationMode=Pods"},
		"both from and allowAnySource":           {"--set", "reservationMode=Pods", "--set", anySource, "--values", values},
	} {
		args = append([]string{"--release", releaseName, "--namespace", releaseNamespace}, append(args, repoPath(t, chartDir))...)
		if _, stderr, err := tryTool(t, "render-chart", args...); err == nil {
			t.Errorf("%s: the chart rendered, want an error", name)
		} else if !strings.Contains(stderr, "webhook.networkPolicy") {
			t.Errorf("%s: error %q does not name webhook.networkPolicy", name, stderr)
		}
	}
}

// reservationModeArg is the scheduler config's WorkflowReservation
// reservationMode.
func reservationModeArg(t *testing.T, config string) any {
	t.Helper()
	var c struct {
		Profiles []struct {
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal([]byte(config), &c); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Profiles {
		for _, pc := range p.PluginConfig {
			if pc.Name == "WorkflowReservation" {
				return pc.Args["reservationMode"]
			}
		}
	}
	t.Fatalf("no WorkflowReservation args in %s", config)
	return nil
}

// reservationMode Pods adds tandem-webhook (ServiceAccount, RBAC, Deployment,
// PodDisruptionBudget, Service, TLS Secret, ValidatingWebhookConfiguration)
// to the default objects and passes the mode to the plugin; Memory, the
// default, renders none of it (TestChartAndKustomizeRenderTheSameObjects).
func TestChartPodsMode(t *testing.T) {
	memory := byKey(renderChart(t))
	if got := reservationModeArg(t, object[v1.ConfigMap](t, memory, configMapKey).Data[configKey]); got != "Memory" {
		t.Errorf("default reservationMode arg = %v, want Memory", got)
	}
	objs := byKey(renderChart(t, "--set", "reservationMode=Pods", "--set", anySource))
	if got := reservationModeArg(t, object[v1.ConfigMap](t, objs, configMapKey).Data[configKey]); got != "Pods" {
		t.Errorf("reservationMode arg = %v, want Pods", got)
	}
	var added []string
	for k := range objs {
		if _, ok := memory[k]; !ok {
			added = append(added, k)
		}
	}
	slices.Sort(added)
	wantAdded := []string{
		webhookDeployment,
		webhookPolicyKey,
		"PodDisruptionBudget/" + releaseNamespace + "/" + webhookName,
		"Role/arc-runners/" + webhookName,
		"RoleBinding/arc-runners/" + webhookName,
		webhookSecretKey,
		"Service/" + releaseNamespace + "/" + webhookName,
		"ServiceAccount/" + releaseNamespace + "/" + webhookName,
		webhookConfigKey,
	}
	if diff := cmp.Diff(wantAdded, added); diff != "" {
		t.Errorf("objects Pods mode adds (-want,+got):\n%s", diff)
	}

	// The scheduler creates placeholders in the runner namespaces
	// (TestNoClusterWidePodCreate) and deletes them: pods delete.
	var verbs []string
	for _, r := range object[rbacv1.ClusterRole](t, objs, "ClusterRole//"+releaseName).Rules {
		if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "pods") {
			verbs = append(verbs, r.Verbs...)
		}
	}
	if !slices.Contains(verbs, "delete") {
		t.Errorf("scheduler's verbs on pods %q, want delete (placeholders)", verbs)
	}
	var create []string
	for _, r := range object[rbacv1.Role](t, objs, "Role/arc-runners/"+releaseName+"-runners").Rules {
		if slices.Contains(r.Resources, "pods") {
			create = append(create, r.Verbs...)
		}
	}
	if !slices.Equal(create, []string{"create"}) {
		t.Errorf("scheduler's verbs on pods in arc-runners %q, want create (placeholders)", create)
	}
	// The webhook watches placeholders, reads runners and deletes
	// placeholders, nothing else, in the runner namespaces it serves only.
	wantRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}}}
	if diff := cmp.Diff(wantRules, object[rbacv1.Role](t, objs, "Role/arc-runners/"+webhookName).Rules); diff != "" {
		t.Errorf("webhook's Role rules in arc-runners (-want,+got):\n%s", diff)
	}
	binding := object[rbacv1.RoleBinding](t, objs, "RoleBinding/arc-runners/"+webhookName)
	if binding.RoleRef.Kind != "Role" || binding.RoleRef.Name != webhookName || len(binding.Subjects) != 1 || binding.Subjects[0].Name != webhookName || binding.Subjects[0].Namespace != releaseNamespace {
		t.Errorf("webhook's RoleBinding = %+v, want its role bound to its ServiceAccount", binding)
	}
	for _, o := range objs {
		if k := o.GetKind(); (k == "ClusterRole" || k == "ClusterRoleBinding") && o.GetName() == webhookName {
			t.Errorf("the webhook has a %s: with runnerNamespaces set its rights are in those namespaces only", k)
		}
	}

	// The configuration is pkg/webhook.Configuration, through the Service.
	config := object[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, webhookConfigKey)
	want := webhook.Configuration(webhookName, admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{
			Namespace: releaseNamespace, Name: webhookName, Path: ptr.To(webhook.Path), Port: ptr.To[int32](443),
		},
		CABundle: config.Webhooks[0].ClientConfig.CABundle,
	}, "runner-pod", []string{"arc-runners"})
	want.TypeMeta = metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"}
	want.Labels = config.Labels
	if diff := cmp.Diff(want, config); diff != "" {
		t.Errorf("the chart's ValidatingWebhookConfiguration is not pkg/webhook.Configuration (-Go,+chart):\n%s", diff)
	}

	// The Secret's certificate is for the Service, signed by the caBundle's CA.
	secret := object[v1.Secret](t, objs, webhookSecretKey)
	if secret.Type != v1.SecretTypeTLS {
		t.Errorf("secret type %s, want %s", secret.Type, v1.SecretTypeTLS)
	}
	if !bytes.Equal(secret.Data["ca.crt"], config.Webhooks[0].ClientConfig.CABundle) {
		t.Errorf("caBundle is not the Secret's ca.crt")
	}
	if _, err := tls.X509KeyPair(secret.Data["tls.crt"], secret.Data["tls.key"]); err != nil {
		t.Errorf("the Secret's tls.crt and tls.key: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(config.Webhooks[0].ClientConfig.CABundle) {
		t.Fatalf("caBundle holds no certificate")
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatalf("tls.crt is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: webhookName + "." + releaseNamespace + ".svc"}); err != nil {
		t.Errorf("serving certificate does not verify for the Service's name: %v", err)
	}

	// Two replicas of the scheduler's image running tandem-webhook, non-root,
	// read-only root filesystem, on different nodes, its certificate from
	// the Secret; the scheduler's selectors do not take its pods.
	d := object[appsv1.Deployment](t, objs, webhookDeployment)
	sched := object[appsv1.Deployment](t, objs, deploymentKey)
	pod := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("webhook replicas = %v, want 2", d.Spec.Replicas)
	}
	c := pod.Containers[0]
	if c.Image != sched.Spec.Template.Spec.Containers[0].Image || !slices.Equal(c.Command, []string{"/usr/local/bin/tandem-webhook"}) {
		t.Errorf("webhook image %s command %q, want the scheduler's image %s running /usr/local/bin/tandem-webhook",
			c.Image, c.Command, sched.Spec.Template.Spec.Containers[0].Image)
	}
	for _, arg := range []string{"--tls-cert-file=/etc/tandem-webhook/tls/tls.crt", "--tls-private-key-file=/etc/tandem-webhook/tls/tls.key", "--port=9443", "--runner-pod-label=runner-pod"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("webhook args %q, want %s", c.Args, arg)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "https" || c.Ports[0].ContainerPort != 9443 {
		t.Errorf("webhook ports = %+v, want https 9443", c.Ports)
	}
	for name, p := range map[string]*v1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != webhook.HealthzPath || p.HTTPGet.Scheme != v1.URISchemeHTTPS {
			t.Errorf("webhook %s probe = %+v, want HTTPS %s", name, p, webhook.HealthzPath)
		}
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("webhook pod securityContext = %+v, want runAsNonRoot", sc)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("webhook container securityContext = %+v, want a read-only root filesystem", sc)
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != v1.LabelHostname {
		t.Errorf("webhook affinity = %+v, want anti-affinity across hostnames", a)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != secret.Name {
		t.Errorf("webhook volumes = %+v, want the Secret %s", pod.Volumes, secret.Name)
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	schedLabels := labels.Set(sched.Spec.Template.Labels)
	selects := func(s *metav1.LabelSelector, l labels.Set) bool {
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return sel.Matches(l)
	}
	if !selects(d.Spec.Selector, podLabels) || selects(d.Spec.Selector, schedLabels) || selects(sched.Spec.Selector, podLabels) {
		t.Errorf("selectors: webhook %v, scheduler %v; each Deployment must select its own pods only", d.Spec.Selector, sched.Spec.Selector)
	}
	if selects(object[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget/"+releaseNamespace+"/"+releaseName).Spec.Selector, podLabels) {
		t.Errorf("the scheduler's PodDisruptionBudget selects webhook pods")
	}
	if labels.SelectorFromSet(object[v1.Service](t, objs, "Service/"+releaseNamespace+"/"+releaseName+"-metrics").Spec.Selector).Matches(podLabels) {
		t.Errorf("the scheduler's metrics Service selects webhook pods")
	}
	pdb := object[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget/"+releaseNamespace+"/"+webhookName)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || !selects(pdb.Spec.Selector, podLabels) {
		t.Errorf("webhook PodDisruptionBudget = %+v, want minAvailable 1 of the webhook pods", pdb.Spec)
	}
	svc := object[v1.Service](t, objs, "Service/"+releaseNamespace+"/"+webhookName)
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.String() != "https" {
		t.Errorf("webhook Service = %+v, want 443 to the webhook pods' https port", svc.Spec)
	}

	// Another runner-pod label goes to the objectSelector and the flag.
	relabelled := byKey(renderChart(t, "--set", "reservationMode=Pods", "--set", anySource, "--set", "workflowReservation.runnerPodLabel=workflow-of"))
	sel := object[admissionregistrationv1.ValidatingWebhookConfiguration](t, relabelled, webhookConfigKey).Webhooks[0].ObjectSelector
	if sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != "workflow-of" || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
		t.Errorf("objectSelector with runnerPodLabel workflow-of = %+v", sel)
	}
	if args := object[appsv1.Deployment](t, relabelled, webhookDeployment).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--runner-pod-label=workflow-of") {
		t.Errorf("webhook args with runnerPodLabel workflow-of = %q", args)
	}

	// A mode that does not exist, or a second one in the args, does not render.
	for _, set := range []string{"reservationMode=Pod", "workflowReservation.reservationMode=Pods"} {
		args := []string{"--release", releaseName, "--namespace", releaseNamespace, "--set", set, repoPath(t, chartDir)}
		if _, stderr, err := tryTool(t, "render-chart", args...); err == nil {
			t.Errorf("--set %s rendered, want an error", set)
		} else if !strings.Contains(stderr, "reservationMode") {
			t.Errorf("--set %s: error %q does not name reservationMode", set, stderr)
		}
	}
}

// manifests/kustomize/pods renders the chart's Pods-mode objects (and the
// namespace) but the certificate: no Secret, no caBundle (the user brings
// them).
func TestKustomizePodsIsTheChartsPodsMode(t *testing.T) {
	chart := byKey(withoutHelmLabels(t, renderChart(t, "--set", "reservationMode=Pods", "--set", anySource)))
	delete(chart, webhookSecretKey)
	webhooks, _, err := unstructured.NestedSlice(chart[webhookConfigKey].Object, "webhooks")
	if err != nil || len(webhooks) != 1 {
		t.Fatalf("the chart's webhooks: %v, %v", webhooks, err)
	}
	unstructured.RemoveNestedField(webhooks[0].(map[string]any), "clientConfig", "caBundle")
	if err := unstructured.SetNestedSlice(chart[webhookConfigKey].Object, webhooks, "webhooks"); err != nil {
		t.Fatal(err)
	}
	pods := byKey(kustomizeBuild(t, kustomizePods))
	delete(pods, "Namespace//"+releaseNamespace)
	if diff := cmp.Diff(chart, pods); diff != "" {
		t.Errorf("helm template --set reservationMode=Pods and %s differ (-helm,+kustomize):\n%s", kustomizePods, diff)
	}
}

// Issue 40: on CNIs whose pod IPs a managed control plane cannot reach the
// webhook must serve on the nodes' network; webhook.hostNetwork does that
// (with the DNS policy a host-network pod needs to resolve Services, and a
// rollout that does not surge onto a node whose port a replica holds), and
// the default stays on the pod network. A NetworkPolicy does nothing for
// host-network pods: with one enabled the chart does not render.
func TestWebhookHostNetwork(t *testing.T) {
	for _, host := range []bool{false, true} {
		objs := byKey(renderChart(t, "--set", "reservationMode=Pods", "--set", anySource, "--set", fmt.Sprintf("webhook.hostNetwork=%v", host),
			"--set", fmt.Sprintf("webhook.networkPolicy.enabled=%v", !host)))
		d := object[appsv1.Deployment](t, objs, webhookDeployment)
		spec := d.Spec.Template.Spec
		if ru := d.Spec.Strategy.RollingUpdate; host && (ru == nil || ru.MaxSurge == nil || *ru.MaxSurge != intstr.FromInt32(0)) {
			t.Errorf("webhook.hostNetwork=true: strategy %+v, want no surge (a replica holds the port on its node)", d.Spec.Strategy)
		}
		if spec.HostNetwork != host {
			t.Errorf("webhook.hostNetwork=%v: the pods' hostNetwork is %v", host, spec.HostNetwork)
		}
		if want := map[bool]v1.DNSPolicy{false: "", true: v1.DNSClusterFirstWithHostNet}[host]; spec.DNSPolicy != want {
			t.Errorf("webhook.hostNetwork=%v: dnsPolicy %q, want %q", host, spec.DNSPolicy, want)
		}
	}
	args := []string{"--release", releaseName, "--namespace", releaseNamespace, "--set", "reservationMode=Pods", "--set", anySource, "--set", "webhook.hostNetwork=true", repoPath(t, chartDir)}
	if _, stderr, err := tryTool(t, "render-chart", args...); err == nil || !strings.Contains(stderr, "networkPolicy.enabled=false") {
		t.Errorf("webhook.hostNetwork with the NetworkPolicy enabled: err %v, %q; want an error that says to disable it", err, stderr)
	}
}
