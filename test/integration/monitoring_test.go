package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
	"github.com/tandem-scheduler/tandem/pkg/webhook"
)

// promSelector is one series selector of an alert or a dashboard panel, as
// hack/promrules prints it with Prometheus's own parser.
type promSelector struct {
	Origin string
	Metric string
	Labels []string
}

// monitoringSelectors renders the chart's PrometheusRule and Grafana
// dashboard and returns every selector they use. hack/promrules parses them
// as Prometheus does (rule groups with unknown fields refused, PromQL): a
// rule or panel that does not parse fails the test.
func monitoringSelectors(t *testing.T) []promSelector {
	t.Helper()
	dir := t.TempDir()
	var rules, dashboard string
	// reservationMode Pods renders every alert, the webhook's too.
	for _, o := range renderChart(t, "--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.dashboard.enabled=true",
		"--set", "reservationMode=Pods", "--set", anySource) {
		switch {
		case o.GetKind() == "PrometheusRule":
			data, err := yaml.Marshal(o.Object["spec"])
			if err != nil {
				t.Fatal(err)
			}
			rules = filepath.Join(dir, "rules.yaml")
			if err := os.WriteFile(rules, data, 0o600); err != nil {
				t.Fatal(err)
			}
		case o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-dashboard"):
			data, _, err := unstructured.NestedString(o.Object, "data", "tandem-scheduler.json")
			if err != nil {
				t.Fatal(err)
			}
			dashboard = filepath.Join(dir, "dashboard.json")
			if err := os.WriteFile(dashboard, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rules == "" || dashboard == "" {
		t.Fatalf("the chart with metrics.prometheusRule and metrics.dashboard enabled renders rules %q, dashboard %q", rules, dashboard)
	}
	cmd := exec.Command("go", "run", ".", "-rules", rules, "-dashboard", dashboard)
	cmd.Dir = repoPath(t, "hack/promrules")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/promrules: %v\n%s", err, stderr.String())
	}
	var exprs []struct {
		Origin    string `json:"origin"`
		Selectors []struct {
			Metric string   `json:"metric"`
			Labels []string `json:"labels"`
		} `json:"selectors"`
	}
	if err := json.Unmarshal(out, &exprs); err != nil {
		t.Fatal(err)
	}
	var sels []promSelector
	for _, e := range exprs {
		for _, s := range e.Selectors {
			sels = append(sels, promSelector{Origin: e.Origin, Metric: s.Metric, Labels: s.Labels})
		}
	}
	return sels
}

// targetLabels are those Prometheus adds to every series it scrapes, and
// cluster, which a multi-cluster Prometheus (external labels, Thanos,
// Mimir) adds: the dashboard selects on it, matching series without it too.
var targetLabels = []string{"job", "namespace", "instance", "pod", "service", "endpoint", "container", "cluster"}

// checkMonitoring holds the chart's alerts and dashboard to what replica r,
// the real tandem-scheduler binary after a run, serves on /metrics: every
// metric they select is exported under that name with those labels. A
// tandem metric with no series yet (a counter nothing incremented in the
// run) is checked against the labels its collector is registered with.
func (e *env) checkMonitoring(r *replica) {
	t := e.t
	t.Helper()
	scraped := e.scrape(r)
	for _, s := range monitoringSelectors(t) {
		var want []string
		for _, l := range s.Labels {
			if !slices.Contains(targetLabels, l) {
				want = append(want, l)
			}
		}
		have, ok := scraped[s.Metric]
		source := r.name + "'s /metrics"
		if !ok {
			have, ok = metrics.LabelNames(s.Metric)
			source = "pkg/metrics"
		}
		if !ok {
			have, ok = webhook.LabelNames(s.Metric)
			source = "tandem-webhook (pkg/webhook)"
		}
		if !ok {
			t.Errorf("%s selects %s, which neither tandem-scheduler nor tandem-webhook exports (not on %s's /metrics, not in pkg/metrics or pkg/webhook)", s.Origin, s.Metric, r.name)
			continue
		}
		for _, l := range want {
			if !slices.Contains(have, l) {
				t.Errorf("%s selects %s by label %q; %s has labels %q", s.Origin, s.Metric, l, source, have)
			}
		}
	}
}

// scrape reads r's /metrics as Prometheus does with the chart's
// ServiceMonitor: with a token of the ServiceAccount whose token Secret the
// ServiceMonitor's authorization names, given only the chart's rights for
// it, and returns each series name's label names. (The local control plane
// runs no token controller to fill that Secret: the token is requested for
// the same ServiceAccount.)
func (e *env) scrape(r *replica) map[string][]string {
	t := e.t
	t.Helper()
	objs := byKey(renderChart(t, "--set", "metrics.serviceMonitor.enabled=true"))
	monitor := objs["ServiceMonitor/"+releaseNamespace+"/"+releaseName]
	if monitor == nil {
		t.Fatal("the chart rendered no ServiceMonitor")
	}
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	endpoint := endpoints[0].(map[string]any)
	if _, ok := endpoint["bearerTokenFile"]; ok {
		t.Error("the ServiceMonitor uses bearerTokenFile, which the Prometheus Operator deprecates")
	}
	secretName, _, _ := unstructured.NestedString(endpoint, "authorization", "credentials", "name")
	key, _, _ := unstructured.NestedString(endpoint, "authorization", "credentials", "key")
	secret := objs["Secret/"+releaseNamespace+"/"+secretName]
	if secret == nil || key != "token" || secret.Object["type"] != string(v1.SecretTypeServiceAccountToken) {
		t.Fatalf("the ServiceMonitor's credentials %s/%s: want key token of a rendered ServiceAccount token Secret", secretName, key)
	}
	reader := secret.GetAnnotations()[v1.ServiceAccountNameKey]
	var rbac []*unstructured.Unstructured
	for _, k := range []string{"ServiceAccount/" + releaseNamespace + "/" + reader, "ClusterRole//" + reader, "ClusterRoleBinding//" + reader} {
		o := objs[k]
		if o == nil {
			t.Fatalf("the chart rendered no %s for the ServiceMonitor's token", k)
		}
		rbac = append(rbac, o)
	}
	applyServerSide(t, e.ctx, rbac, "tandem-helm")
	token, err := e.client.CoreV1().ServiceAccounts(releaseNamespace).CreateToken(e.ctx, reader, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var body []byte
	// The new binding reaches the replica's delegated authorizer after
	// its cache of denials expires: polled until it does.
	e.poll(r.name+" serves /metrics to a scraper allowed to get it", func() (bool, error) {
		req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, r.url+"/metrics", http.NoBody)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+token.Status.Token)
		resp, err := controlplane.InsecureHTTPClient().Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, nil
		}
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(resp.Body); err != nil {
			return false, err
		}
		body = buf.Bytes()
		return true, nil
	})
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s's /metrics does not parse: %v", r.name, err)
	}
	out := map[string][]string{}
	for name, f := range families {
		var labels []string
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		out[name] = labels
		if f.GetType().String() == "HISTOGRAM" {
			out[name+"_bucket"] = append(slices.Clone(labels), "le")
			out[name+"_sum"], out[name+"_count"] = labels, labels
		}
	}
	return out
}

// Issue 40: every alert links to its runbook, a section of
// docs/troubleshooting.md named after it, at the base URL the values give.
func TestAlertsLinkToTheirRunbooks(t *testing.T) {
	const base = "https://docs.example.test/tandem/troubleshooting.md"
	var groups []any
	for _, o := range renderChart(t, "--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.prometheusRule.runbookBaseURL="+base, "--set", "reservationMode=Pods", "--set", anySource) {
		if o.GetKind() == "PrometheusRule" {
			groups, _, _ = unstructured.NestedSlice(o.Object, "spec", "groups")
		}
	}
	doc := string(readFile(t, "docs/troubleshooting.md"))
	alerts := 0
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			rule := r.(map[string]any)
			name, _ := rule["alert"].(string)
			if name == "" {
				continue
			}
			alerts++
			url, _, _ := unstructured.NestedString(rule, "annotations", "runbook_url")
			if want := base + "#" + strings.ToLower(name); url != want {
				t.Errorf("alert %s: runbook_url %q, want %q", name, url, want)
			}
			if !strings.Contains(doc, "\n### "+name+"\n") {
				t.Errorf("alert %s: docs/troubleshooting.md has no section \"### %s\" for its runbook_url to land on", name, name)
			}
		}
	}
	if alerts == 0 {
		t.Fatal("the chart renders no alerts")
	}
}
