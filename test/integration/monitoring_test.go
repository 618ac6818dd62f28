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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/pkg/metrics"
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
	for _, o := range renderChart(t, "--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.dashboard.enabled=true") {
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

// targetLabels are those Prometheus adds to every series it scrapes.
var targetLabels = []string{"job", "namespace", "instance", "pod", "service", "endpoint", "container"}

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
			t.Errorf("%s selects %s, which tandem-scheduler does not export (not on %s's /metrics, not in pkg/metrics)", s.Origin, s.Metric, r.name)
			continue
		}
		for _, l := range want {
			if !slices.Contains(have, l) {
				t.Errorf("%s selects %s by label %q; %s has labels %q", s.Origin, s.Metric, l, source, have)
			}
		}
	}
}

// scrape reads r's /metrics as Prometheus does, with a ServiceAccount token
// allowed to get /metrics, and returns each series name's label names.
func (e *env) scrape(r *replica) map[string][]string {
	t := e.t
	t.Helper()
	name := "scraper-" + e.ns
	if _, err := e.client.CoreV1().ServiceAccounts(e.ns).Create(e.ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.RbacV1().ClusterRoles().Create(e.ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.RbacV1().ClusterRoles().Delete(e.ctx, name, metav1.DeleteOptions{}) })
	if _, err := e.client.RbacV1().ClusterRoleBindings().Create(e.ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: e.ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.RbacV1().ClusterRoleBindings().Delete(e.ctx, name, metav1.DeleteOptions{}) })
	token, err := e.client.CoreV1().ServiceAccounts(e.ns).CreateToken(e.ctx, "scraper", &authenticationv1.TokenRequest{
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
	for _, o := range renderChart(t, "--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.prometheusRule.runbookBaseURL="+base) {
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
