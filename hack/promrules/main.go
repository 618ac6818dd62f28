// Command promrules checks tandem's alerting rules and Grafana dashboard with
// Prometheus's own parsers and prints every series selector they use, for
// the test that holds them to the metrics tandem-scheduler exports
// (test/integration/monitoring_test.go). It is a module of its own so that
// Prometheus's dependencies stay out of tandem's.
//
//	promrules -rules RULES.yaml -dashboard DASHBOARD.json
//
// RULES.yaml holds rule groups (a PrometheusRule's spec, or a Prometheus
// rules file); DASHBOARD.json a Grafana dashboard whose panels' targets are
// PromQL. The output is JSON: one object per expression with its origin and
// selectors ({"metric": name, "labels": [label names matched]}). Any rule or
// expression that does not parse is an error (exit status 1).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// Expr is one PromQL expression and the series it selects.
type Expr struct {
	// Origin names the rule or panel the expression comes from.
	Origin    string     `json:"origin"`
	Expr      string     `json:"expr"`
	Selectors []Selector `json:"selectors"`
}

// Selector is one vector selector: the metric and the labels it matches on.
type Selector struct {
	Metric string   `json:"metric"`
	Labels []string `json:"labels"`
}

func main() {
	rules := flag.String("rules", "", "a rule groups YAML file")
	dashboard := flag.String("dashboard", "", "a Grafana dashboard JSON file")
	flag.Parse()
	if *rules == "" && *dashboard == "" {
		fmt.Fprintln(os.Stderr, "promrules: give -rules, -dashboard or both")
		os.Exit(2)
	}
	var out []Expr
	p := parser.NewParser(parser.Options{})
	for _, src := range []struct {
		file  string
		exprs func(string, parser.Parser) ([]Expr, error)
	}{{*rules, ruleExprs}, {*dashboard, dashboardExprs}} {
		if src.file == "" {
			continue
		}
		exprs, err := src.exprs(src.file, p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "promrules: %v\n", err)
			os.Exit(1)
		}
		out = append(out, exprs...)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "promrules: %v\n", err)
		os.Exit(1)
	}
}

// ruleExprs parses file as Prometheus does a rules file (unknown fields are
// errors) and returns the expression of each rule.
func ruleExprs(file string, p parser.Parser) ([]Expr, error) {
	groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, p, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var out []Expr
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			e, err := parse(p, r.Expr)
			if err != nil {
				return nil, fmt.Errorf("rule %s/%s: %w", g.Name, name, err)
			}
			out = append(out, Expr{Origin: "rule " + g.Name + "/" + name, Expr: r.Expr, Selectors: e})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rules", file)
	}
	return out, nil
}

type dashboard struct {
	Panels []panel `json:"panels"`
}

type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// dashboardExprs returns the PromQL of every panel target in file (rows'
// panels too), with Grafana's variables replaced by values of their kind.
func dashboardExprs(file string, p parser.Parser) ([]Expr, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []Expr
	var walk func([]panel) error
	walk = func(panels []panel) error {
		for _, pn := range panels {
			for _, t := range pn.Targets {
				sel, err := parse(p, grafanaVariables(t.Expr))
				if err != nil {
					return fmt.Errorf("panel %q: %w", pn.Title, err)
				}
				out = append(out, Expr{Origin: "panel " + pn.Title, Expr: t.Expr, Selectors: sel})
			}
			if err := walk(pn.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no panel has a PromQL target", file)
	}
	return out, nil
}

var (
	rangeVariable = regexp.MustCompile(`\$__(rate_)?interval|\$\{__(rate_)?interval\}|\$__range`)
	variable      = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)
)

// grafanaVariables replaces Grafana's range variables with a duration and
// template variables with a label value, as Grafana does before it queries.
func grafanaVariables(expr string) string {
	expr = rangeVariable.ReplaceAllString(expr, "5m")
	return variable.ReplaceAllString(expr, "value")
}

// parse parses expr and returns its selectors, each with the names of the
// labels it matches on or is aggregated by, sorted: the labels the series
// must carry.
func parse(p parser.Parser, expr string) ([]Selector, error) {
	e, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var out []Selector
	parser.Inspect(e, func(node parser.Node, path []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := Selector{Metric: vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName {
				s.Labels = append(s.Labels, m.Name)
			}
		}
		for _, n := range path {
			if agg, ok := n.(*parser.AggregateExpr); ok && !agg.Without {
				s.Labels = append(s.Labels, agg.Grouping...)
			}
		}
		slices.Sort(s.Labels)
		s.Labels = slices.Compact(s.Labels)
		out = append(out, s)
		return nil
	})
	return out, nil
}
