package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

const (
	deploymentKey = "Deployment/" + releaseNamespace + "/" + releaseName
	configMapKey  = "ConfigMap/" + releaseNamespace + "/" + releaseName + "-config"
	configKey     = "scheduler-config.yaml"
)

// Helm and kustomize render the same objects; the kustomize default adds
// only the namespace.
func TestChartAndKustomizeRenderTheSameObjects(t *testing.T) {
	chart := byKey(withoutHelmLabels(t, renderChart(t)))
	base := byKey(kustomizeBuild(t, kustomizeBase))
	if diff := cmp.Diff(chart, base); diff != "" {
		t.Errorf("helm template and kustomize build differ (-helm,+kustomize):\n%s", diff)
	}
	var keys []string
	for k := range chart {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	wantKeys := []string{
		"ClusterRole//tandem-scheduler",
		"ClusterRoleBinding//tandem-scheduler",
		configMapKey,
		deploymentKey,
		"PodDisruptionBudget/tandem-system/tandem-scheduler",
		"ResourceQuota/tandem-system/tandem-scheduler-critical-pods",
		"Role/arc-runners/tandem-scheduler-hook-templates",
		"Role/arc-runners/tandem-scheduler-runners",
		"Role/tandem-system/tandem-scheduler-leader-election",
		"RoleBinding/arc-runners/tandem-scheduler-hook-templates",
		"RoleBinding/arc-runners/tandem-scheduler-runners",
		"RoleBinding/kube-system/tandem-scheduler-authentication-reader",
		"RoleBinding/tandem-system/tandem-scheduler-leader-election",
		"Service/tandem-system/tandem-scheduler-metrics",
		"ServiceAccount/tandem-system/tandem-scheduler",
		"ValidatingAdmissionPolicy//tandem-scheduler-pods",
		"ValidatingAdmissionPolicyBinding//tandem-scheduler-pods",
	}
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("rendered objects (-want,+got):\n%s", diff)
	}

	withNamespace := byKey(kustomizeBuild(t, kustomizeDefault))
	if _, ok := withNamespace["Namespace//"+releaseNamespace]; !ok {
		t.Errorf("%s does not create the namespace %s", kustomizeDefault, releaseNamespace)
	}
	delete(withNamespace, "Namespace//"+releaseNamespace)
	if diff := cmp.Diff(base, withNamespace); diff != "" {
		t.Errorf("%s is not %s plus the namespace (-base,+default):\n%s", kustomizeDefault, kustomizeBase, diff)
	}
}

// Issue 20: the scheduler could create pods in every namespace, which with
// pods/binding amounts to cluster-admin for whoever compromises it. It may
// create pods (pair pods, placeholders) only in the runner namespaces: a
// Role in each of the chart's runnerNamespaces (arc-runners by default, as
// in the kustomize base), no ClusterRole with pod create in any rendering.
func TestNoClusterWidePodCreate(t *testing.T) {
	renderings := map[string][]*unstructured.Unstructured{
		"chart":                 renderChart(t),
		"chart, Pods mode":      renderChart(t, "--set", "reservationMode=Pods", "--set", anySource),
		"chart, two namespaces": renderChart(t, "--set", "runnerNamespaces={team-a,team-b}"),
		"kustomize base":        kustomizeBuild(t, kustomizeBase),
		"kustomize Pods mode":   kustomizeBuild(t, kustomizePods),
	}
	wantRoles := map[string][]string{"chart, two namespaces": {"team-a", "team-b"}}
	for name, objs := range renderings {
		var podCreate []string
		for _, o := range objs {
			if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
				continue
			}
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatal(err)
			}
			for _, r := range role.Rules {
				if (slices.Contains(r.Resources, "pods") || slices.Contains(r.Resources, "*")) && (slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "*")) {
					if o.GetKind() == "ClusterRole" {
						t.Errorf("%s: ClusterRole %s grants pod create", name, o.GetName())
					}
					podCreate = append(podCreate, o.GetNamespace())
				}
			}
		}
		want, ok := wantRoles[name]
		if !ok {
			want = []string{"arc-runners"}
		}
		slices.Sort(podCreate)
		if !slices.Equal(podCreate, want) {
			t.Errorf("%s: pod create granted in namespaces %v, want %v", name, podCreate, want)
		}
	}
}

// The chart's default configuration is manifests/scheduler-config.yaml with
// the lease in the release namespace; pods roll when it changes.
func TestChartSchedulerConfig(t *testing.T) {
	objs := byKey(renderChart(t))
	config := object[v1.ConfigMap](t, objs, configMapKey).Data[configKey]
	var got, want map[string]any
	if err := yaml.Unmarshal([]byte(config), &got); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(readFile(t, "manifests/scheduler-config.yaml"), &want); err != nil {
		t.Fatal(err)
	}
	want["leaderElection"].(map[string]any)["resourceNamespace"] = releaseNamespace
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart's config is not manifests/scheduler-config.yaml (-example,+chart):\n%s", diff)
	}
	checksum := configChecksum(t, objs, deploymentKey)
	if sum := sha256.Sum256([]byte(strings.TrimSuffix(config, "\n"))); checksum != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum/config = %s, want the sha256 of the config %x", checksum, sum)
	}

	changed := byKey(renderChart(t, "--namespace", "ci", "--set", "workflowReservation.runnerPodLabel=workflow-of",
		"--set", "leaderElection.resourceName=tandem-ci", "--set", "schedulerName=tandem-ci"))
	config = object[v1.ConfigMap](t, changed, "ConfigMap/ci/tandem-scheduler-config").Data[configKey]
	wantContains(t, "config with other values", config, "runnerPodLabel: workflow-of", "resourceName: tandem-ci",
		"resourceNamespace: ci", "schedulerName: tandem-ci")
	if got := configChecksum(t, changed, "Deployment/ci/tandem-scheduler"); got == checksum {
		t.Errorf("checksum/config did not change with the config: pods would not roll")
	}
	role := object[rbacv1.Role](t, changed, "Role/ci/tandem-scheduler-leader-election")
	if names := role.Rules[1].ResourceNames; !slices.Equal(names, []string{"tandem-ci"}) {
		t.Errorf("lease role names %v, want the configured lease [tandem-ci]", names)
	}

	// The placeholders' image is tandem-pause from the scheduler's
	// repository path and tag, unless set.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "image.repository=registry.example/ci/tandem-scheduler", "--set", "image.tag=v9"}, "placeholderImage: registry.example/ci/tandem-pause:v9"},
		{[]string{"--set", "image.repository=tandem-scheduler"}, "placeholderImage: tandem-pause:v0."},
		{[]string{"--set", "workflowReservation.placeholderImage=registry.example/mirror/pause:3.10"}, "placeholderImage: registry.example/mirror/pause:3.10"},
	} {
		objs := byKey(renderChart(t, c.args...))
		wantContains(t, fmt.Sprintf("config with %v", c.args), object[v1.ConfigMap](t, objs, configMapKey).Data[configKey], c.want)
	}

	monitored := byKey(renderChart(t, "--set", "metrics.serviceMonitor.enabled=true"))
	if _, ok := monitored["ServiceMonitor/tandem-system/tandem-scheduler"]; !ok {
		t.Errorf("metrics.serviceMonitor.enabled=true rendered no ServiceMonitor")
	}
}

func configChecksum(t *testing.T, objs map[string]*unstructured.Unstructured, deployment string) string {
	t.Helper()
	return object[appsv1.Deployment](t, objs, deployment).Spec.Template.Annotations["checksum/config"]
}

// The Deployment runs two non-root replicas on different nodes with HTTPS
// probes, a read-only root filesystem and resource requests.
func TestChartDeployment(t *testing.T) {
	d := object[appsv1.Deployment](t, byKey(renderChart(t)), deploymentKey)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != v1.LabelHostname {
		t.Errorf("affinity = %+v, want anti-affinity between replicas across hostnames", a)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot", sc)
	}
	c := pod.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext = %+v, want a read-only root filesystem and no privilege escalation", sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests = %v, want cpu and memory", c.Resources.Requests)
	}
	for name, p := range map[string]*v1.Probe{"/livez": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Scheme != v1.URISchemeHTTPS || p.HTTPGet.Port.String() != "https" {
			t.Errorf("probe on %s = %+v, want HTTPS on the port named https", name, p)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "https" || c.Ports[0].ContainerPort != 10259 {
		t.Errorf("ports = %+v, want https 10259", c.Ports)
	}
	if !slices.Contains(c.Args, "--config=/etc/tandem/scheduler-config.yaml") {
		t.Errorf("args = %q, want --config from the ConfigMap mount", c.Args)
	}
}

// Issue 21: one image per Kubernetes minor. The chart picks the image built
// for the cluster's minor (.Capabilities.KubeVersion), the newest build for
// a newer cluster, and refuses an older cluster unless image.tag names an
// image; the scheduler, the webhook and the placeholders' tandem-pause all
// take that tag, and the Deployment names the minor.
func TestChartImagePerMinor(t *testing.T) {
	const version = "v0.40.0" // Chart.yaml's appVersion
	// Every version hack/lib/version.sh builds an image for, a vendor's
	// version string, and a cluster one minor newer than the newest build.
	versions := supportedVersions(t)
	oldest, newest := minorOf(t, versions[0]), minorOf(t, versions[len(versions)-1])
	type kubeMinor struct{ kube, minor string }
	var cases []kubeMinor
	for _, v := range versions {
		cases = append(cases, kubeMinor{v, minorOf(t, v)})
	}
	cases = append(cases, kubeMinor{"v" + newest + ".7-eks-2b5c2a1", newest}, kubeMinor{"v" + nextMinor(t, newest) + ".0", newest})
	for _, c := range cases {
		objs := byKey(renderChart(t, "--kube-version", c.kube, "--set", "reservationMode=Pods", "--set", anySource))
		tag := version + "-k8s" + c.minor
		d := object[appsv1.Deployment](t, objs, deploymentKey)
		if got, want := d.Spec.Template.Spec.Containers[0].Image, "REGISTRY/tandem-scheduler:"+tag; got != want {
			t.Errorf("Kubernetes %s: the scheduler's image is %s, want %s", c.kube, got, want)
		}
		if got := d.Annotations["tandem.dev/kubernetes-minor"]; got != c.minor {
			t.Errorf("Kubernetes %s: the Deployment names minor %q, want %q", c.kube, got, c.minor)
		}
		w := object[appsv1.Deployment](t, objs, "Deployment/"+releaseNamespace+"/"+releaseName+"-webhook")
		if got, want := w.Spec.Template.Spec.Containers[0].Image, "REGISTRY/tandem-scheduler:"+tag; got != want {
			t.Errorf("Kubernetes %s: the webhook's image is %s, want %s", c.kube, got, want)
		}
		wantContains(t, "the config for Kubernetes "+c.kube, object[v1.ConfigMap](t, objs, configMapKey).Data[configKey],
			"placeholderImage: REGISTRY/tandem-pause:"+tag)
	}

	// Older than every build: a clear failure, unless the user names an image.
	older := prevMinor(t, oldest)
	_, stderr, err := tryTool(t, "render-chart", "--kube-version", "v"+older+".7", repoPath(t, chartDir))
	if err == nil {
		t.Errorf("the chart rendered for Kubernetes %s, older than every build", older)
	}
	wantContains(t, "the refusal of Kubernetes "+older, stderr,
		fmt.Sprintf("Kubernetes %s is older than every tandem-scheduler build (%s to %s)", older, oldest, newest), "image.tag")
	objs := byKey(renderChart(t, "--kube-version", "v"+older+".7", "--set", "image.tag=v0.40.0-custom"))
	d := object[appsv1.Deployment](t, objs, deploymentKey)
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "REGISTRY/tandem-scheduler:v0.40.0-custom" {
		t.Errorf("with image.tag set the image is %s, want REGISTRY/tandem-scheduler:v0.40.0-custom", got)
	}
	if _, ok := d.Annotations["tandem.dev/kubernetes-minor"]; ok {
		t.Errorf("with image.tag set the Deployment still names a minor it cannot know")
	}
}

// The chart's notes name the image it chose, and warn when the cluster is
// more than one minor newer than the newest build.
func TestChartNotes(t *testing.T) {
	versions := supportedVersions(t)
	newest := minorOf(t, versions[len(versions)-1])
	notes := func(kube string) string {
		t.Helper()
		return string(runTool(t, "render-chart", "--notes", "--kube-version", kube, repoPath(t, chartDir)))
	}
	for _, v := range versions {
		got := notes(v)
		wantContains(t, "the notes for Kubernetes "+v, got, "REGISTRY/tandem-scheduler:v0.40.0-k8s"+minorOf(t, v), "Kubernetes "+v)
		if strings.Contains(got, "WARNING") {
			t.Errorf("the notes for Kubernetes %s warn:\n%s", v, got)
		}
	}
	next := "v" + nextMinor(t, newest) + ".0"
	if got := notes(next); strings.Contains(got, "WARNING") {
		t.Errorf("the notes for Kubernetes %s, within the skew policy of the %s build, warn:\n%s", next, newest, got)
	}
	beyond := "v" + nextMinor(t, nextMinor(t, newest)) + ".0"
	wantContains(t, "the notes for Kubernetes "+beyond, notes(beyond), "WARNING", "outside kube-scheduler's version-skew", "tandem-scheduler build ("+newest+")")
}

// supportedVersions are the Kubernetes versions hack/lib/version.sh builds
// tandem for (TANDEM_KUBE_VERSIONS), oldest first: the chart must have an
// image for each.
func supportedVersions(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("bash", "-c", `source hack/lib/version.sh && echo "${TANDEM_KUBE_VERSIONS[@]}"`)
	cmd.Dir = repoPath(t, ".")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reading TANDEM_KUBE_VERSIONS from hack/lib/version.sh: %v", err)
	}
	versions := strings.Fields(string(out))
	if len(versions) == 0 {
		t.Fatal("hack/lib/version.sh lists no TANDEM_KUBE_VERSIONS")
	}
	return versions
}

// minorOf is "1.36" for "v1.36.3".
func minorOf(t *testing.T, version string) string {
	t.Helper()
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		t.Fatalf("cannot read the minor of %q", version)
	}
	return parts[0] + "." + parts[1]
}

// nextMinor is "1.37" for "1.36", prevMinor "1.35".
func nextMinor(t *testing.T, minor string) string { return addMinor(t, minor, 1) }
func prevMinor(t *testing.T, minor string) string { return addMinor(t, minor, -1) }

func addMinor(t *testing.T, minor string, d int) string {
	t.Helper()
	var major, m int
	if _, err := fmt.Sscanf(minor, "%d.%d", &major, &m); err != nil {
		t.Fatalf("cannot read minor %q: %v", minor, err)
	}
	return fmt.Sprintf("%d.%d", major, m+d)
}

// helmLabels are Helm's standard labels, which the chart puts on every
// object (not on pods) and the kustomize bases do not.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by"}

// withoutHelmLabels drops Helm's standard labels from objs, failing if an
// object lacks one: what is left is what the kustomize bases render.
func withoutHelmLabels(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		labels := o.GetLabels()
		for _, l := range helmLabels {
			if _, ok := labels[l]; !ok {
				t.Errorf("%s/%s has no label %s", o.GetKind(), o.GetName(), l)
			}
			delete(labels, l)
		}
		o.SetLabels(labels)
	}
	return objs
}

// Issue 40: the values a platform team expects of a chart. Pods carry
// podLabels and podAnnotations, not Helm's labels (a chart upgrade alone does
// not roll them); featureGates and extraArgs follow the chart's flags; both
// Deployments spread over zones unless told otherwise; the pods run at
// system-cluster-critical, with a ResourceQuota that admits them where the
// cluster limits that class, counting the webhook's replicas in Pods mode.
func TestChartValues(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`reservationMode: Pods
featureGates: {SchedulerQueueingHints: true, OpportunisticBatching: false}
extraArgs: ["--kube-api-qps=200"]
podAnnotations: {example.com/owner: platform}
podLabels: {team: ci}
webhook:
  networkPolicy: {allowAnySource: true}
  extraArgs: ["--v=4"]
  podLabels: {team: ci-webhook}
  podAnnotations: {example.com/owner: platform}
  topologySpreadConstraints: []
`), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := byKey(renderChart(t, "--values", values))
	d := object[appsv1.Deployment](t, objs, deploymentKey)
	pod := d.Spec.Template
	if pod.Labels["team"] != "ci" || pod.Annotations["example.com/owner"] != "platform" {
		t.Errorf("scheduler pod labels %v, annotations %v: want podLabels and podAnnotations", pod.Labels, pod.Annotations)
	}
	for _, l := range helmLabels {
		if _, ok := pod.Labels[l]; ok {
			t.Errorf("scheduler pods carry Helm's label %s", l)
		}
		if _, ok := d.Labels[l]; !ok {
			t.Errorf("the Deployment lacks Helm's label %s", l)
		}
	}
	args := pod.Spec.Containers[0].Args
	if want := []string{"--feature-gates=OpportunisticBatching=false,SchedulerQueueingHints=true", "--kube-api-qps=200"}; !slices.Equal(args[len(args)-2:], want) {
		t.Errorf("scheduler args %q, want them to end with %q", args, want)
	}
	if got := pod.Spec.PriorityClassName; got != "system-cluster-critical" {
		t.Errorf("scheduler priorityClassName %q, want system-cluster-critical", got)
	}
	if tsc := pod.Spec.TopologySpreadConstraints; len(tsc) != 1 || tsc[0].TopologyKey != v1.LabelTopologyZone ||
		tsc[0].WhenUnsatisfiable != v1.ScheduleAnyway || tsc[0].LabelSelector == nil || tsc[0].LabelSelector.MatchLabels["app.kubernetes.io/name"] != "tandem-scheduler" {
		t.Errorf("scheduler topologySpreadConstraints %+v, want its replicas spread over zones, preferred", tsc)
	}

	w := object[appsv1.Deployment](t, objs, "Deployment/"+releaseNamespace+"/"+releaseName+"-webhook")
	wpod := w.Spec.Template
	if wpod.Labels["team"] != "ci-webhook" || wpod.Annotations["example.com/owner"] != "platform" {
		t.Errorf("webhook pod labels %v, annotations %v: want webhook.podLabels and webhook.podAnnotations", wpod.Labels, wpod.Annotations)
	}
	if wargs := wpod.Spec.Containers[0].Args; wargs[len(wargs)-1] != "--v=4" {
		t.Errorf("webhook args %q, want them to end with webhook.extraArgs", wargs)
	}
	if tsc := wpod.Spec.TopologySpreadConstraints; len(tsc) != 0 {
		t.Errorf("webhook topologySpreadConstraints %+v, want none (set to [])", tsc)
	}
	if got := wpod.Spec.PriorityClassName; got != "system-cluster-critical" {
		t.Errorf("webhook priorityClassName %q, want the scheduler's", got)
	}

	quota := object[v1.ResourceQuota](t, objs, "ResourceQuota/"+releaseNamespace+"/"+releaseName+"-critical-pods")
	if got := quota.Spec.Hard.Pods().Value(); got != 8 {
		t.Errorf("quota of critical pods %d, want 8: twice the two schedulers and the two webhooks", got)
	}
	if sel := quota.Spec.ScopeSelector; sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].ScopeName != v1.ResourceQuotaScopePriorityClass ||
		!slices.Equal(sel.MatchExpressions[0].Values, []string{"system-cluster-critical"}) {
		t.Errorf("quota scope %+v, want the priority class system-cluster-critical", sel)
	}
	if _, ok := byKey(renderChart(t, "--set", "priorityClassName="))["ResourceQuota/"+releaseNamespace+"/"+releaseName+"-critical-pods"]; ok {
		t.Error("a quota for critical pods without a critical priority class")
	}
	// Found in review: in kube-system the quota would count the cluster's
	// own critical pods; an umbrella chart passes global; a values file that
	// copies values.yaml's null keeps the default spread.
	inKubeSystem := byKey(parseObjects(t, runTool(t, "render-chart", "--release", releaseName, "--namespace", "kube-system", "--set", "global.registry=x", repoPath(t, chartDir))))
	for key := range inKubeSystem {
		if strings.HasPrefix(key, "ResourceQuota/") {
			t.Errorf("%s rendered in kube-system", key)
		}
	}
	nullValues := filepath.Join(t.TempDir(), "null.yaml")
	if err := os.WriteFile(nullValues, []byte("topologySpreadConstraints: null\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withNull := object[appsv1.Deployment](t, byKey(renderChart(t, "--values", nullValues)), deploymentKey)
	if tsc := withNull.Spec.Template.Spec.TopologySpreadConstraints; len(tsc) != 1 || tsc[0].TopologyKey != v1.LabelTopologyZone {
		t.Errorf("with topologySpreadConstraints: null, %+v; want the zone spread", tsc)
	}
}

// Issue 40: values.schema.json, which Helm enforces on install, upgrade and
// template, turns a mistyped or misspelled value into an error naming it.
func TestChartSchemaRefusesBadValues(t *testing.T) {
	for set, want := range map[string]string{
		"replicaCount=two":            "at '/replicaCount': got string, want integer",
		"reservationMode=pods":        "at '/reservationMode': value must be one of 'Memory', 'Pods'",
		"replicaCont=2":               "additional properties 'replicaCont' not allowed",
		"extraArgs={v=4}":             "at '/extraArgs/0': 'v=4' does not match pattern '^--'",
		"featureGates.SomeGate=maybe": "at '/featureGates/SomeGate': got string, want boolean",
		"webhook.port=80":             "at '/webhook/port': minimum: got 80, want 1,024",
		// Found in review: a pod label the chart sets was written twice,
		// and name or instance would break the selector.
		`podLabels.app\.kubernetes\.io/name=x`: "invalid propertyName 'app.kubernetes.io/name'",
	} {
		args := []string{"--release", releaseName, "--namespace", releaseNamespace, "--set", set, repoPath(t, chartDir)}
		if _, stderr, err := tryTool(t, "render-chart", args...); err == nil {
			t.Errorf("--set %s rendered, want the schema's error", set)
		} else if !strings.Contains(stderr, "values don't meet the specifications of the schema") || !strings.Contains(stderr, want) {
			t.Errorf("--set %s: error %q, want the schema's, with %q", set, stderr, want)
		}
	}
}

// Issue 40: the chart a release ships (hack/release.sh, packaged with the
// release's version) installs: Helm loads the .tgz and renders the same
// objects as the chart's directory, with the release's version in the image
// tags and Helm's chart label.
func TestPackagedChartRenders(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(repoPath(t, "hack/release.sh"), "chart", dir)
	cmd.Env = append(os.Environ(), "VERSION=v9.8.7")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh chart: %v\n%s", err, out)
	}
	tgz := filepath.Join(dir, "tandem-scheduler-9.8.7.tgz")
	packaged := byKey(parseObjects(t, runTool(t, "render-chart", "--release", releaseName, "--namespace", releaseNamespace, tgz)))
	fromDir := byKey(renderChart(t))
	if len(packaged) != len(fromDir) {
		t.Errorf("the packaged chart renders %d objects, its directory %d", len(packaged), len(fromDir))
	}
	for key := range fromDir {
		if _, ok := packaged[key]; !ok {
			t.Errorf("the packaged chart does not render %s", key)
		}
	}
	d := object[appsv1.Deployment](t, packaged, deploymentKey)
	if image := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(image, ":v9.8.7-k8s1.37") {
		t.Errorf("image %q, want the release's tag for the cluster's minor", image)
	}
	if got := d.Labels["helm.sh/chart"]; got != "tandem-scheduler-9.8.7" {
		t.Errorf("helm.sh/chart = %q, want tandem-scheduler-9.8.7", got)
	}
}

// A release takes its version from hack/lib/version.sh (TANDEM_VERSION, the
// images' tags); the chart's version and appVersion must say the same, or
// an installed chart would name images no release built.
func TestChartVersionIsTandemsVersion(t *testing.T) {
	script := string(readFile(t, "hack/lib/version.sh"))
	_, rest, ok := strings.Cut(script, "\nTANDEM_VERSION=")
	if !ok {
		t.Fatal("hack/lib/version.sh sets no TANDEM_VERSION")
	}
	version, _, _ := strings.Cut(rest, "\n")
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(readFile(t, chartDir+"/Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion != version || "v"+chart.Version != version {
		t.Errorf("Chart.yaml version %q, appVersion %q; TANDEM_VERSION %q: want %q and %q", chart.Version, chart.AppVersion, version, strings.TrimPrefix(version, "v"), version)
	}
}
