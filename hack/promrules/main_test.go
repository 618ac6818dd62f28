package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

func TestParseSelectsMatchersAndGrouping(t *testing.T) {
	got, err := parse(parser.NewParser(parser.Options{}), grafanaVariables(`sum by (phase) (rate(x_total{job="$job", kind!~"a|b"}[$__rate_interval])) / on() group_left sum(y)`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Selector{{Metric: "x_total", Labels: []string{"job", "kind", "phase"}}, {Metric: "y"}}
	if !slices.EqualFunc(got, want, func(a, b Selector) bool { return a.Metric == b.Metric && slices.Equal(a.Labels, b.Labels) }) {
		t.Errorf("parse = %+v, want %+v", got, want)
	}
}

func TestRulesRefusesWhatPrometheusRefuses(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for name, rules := range map[string]string{
		"bad expr":      "groups: [{name: g, rules: [{alert: A, expr: 'sum(x'}]}]",
		"unknown field": "groups: [{name: g, rules: [{alert: A, expr: x, severity: high}]}]",
		"no rules":      "groups: []",
	} {
		file := filepath.Join(t.TempDir(), "rules.yaml")
		if err := os.WriteFile(file, []byte(rules), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ruleExprs(file, p); err == nil {
			t.Errorf("%s: ruleExprs accepted %s", name, rules)
		}
	}
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte("groups: [{name: g, rules: [{alert: A, expr: 'up == 0', for: 5m}]}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ruleExprs(file, p)
	if err != nil || len(got) != 1 || !strings.HasSuffix(got[0].Origin, "g/A") || got[0].Selectors[0].Metric != "up" {
		t.Errorf("ruleExprs = %+v, %v; want rule g/A selecting up", got, err)
	}
}
