// Command render-chart renders a Helm chart as `helm template` does, with
// Helm's own Go packages, so that neither the Makefile nor the tests need a
// helm binary:
//
//	render-chart --namespace tandem-system [--values f.yaml] [--set a.b=c] CHART_DIR
//
// It prints the rendered objects, in Helm's install order, as one YAML
// stream. Hooks are not printed (tandem's chart has none); NOTES.txt is
// printed instead of the manifests with --notes.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	release := flag.String("release", "tandem-scheduler", "release name")
	namespace := flag.String("namespace", "tandem-system", "release namespace")
	kubeVersion := flag.String("kube-version", "v1.37.2", "Kubernetes version for .Capabilities.KubeVersion")
	var valueFiles, sets stringList
	flag.Var(&valueFiles, "values", "values file (repeatable)")
	flag.Var(&sets, "set", "key=value (repeatable), as helm --set")
	notes := flag.Bool("notes", false, "print the rendered NOTES.txt instead of the manifests")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: render-chart [flags] CHART_DIR")
		os.Exit(2)
	}
	out, err := render(flag.Arg(0), *release, *namespace, *kubeVersion, valueFiles, sets, *notes)
	if err != nil {
		fmt.Fprintln(os.Stderr, "render-chart:", err)
		os.Exit(1)
	}
	fmt.Print(out)
}

func render(dir, release, namespace, kubeVersion string, valueFiles, sets []string, notes bool) (string, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return "", err
	}
	vals := map[string]any{}
	for _, f := range valueFiles {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return "", err
		}
		vals = chartutil.CoalesceTables(v.AsMap(), vals)
	}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			return "", fmt.Errorf("--set %s: %w", s, err)
		}
	}
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return "", err
	}
	caps.KubeVersion = *kv
	// As helm install and helm template do before rendering.
	if r := chrt.Metadata.KubeVersion; r != "" && !chartutil.IsCompatibleRange(r, kv.String()) {
		return "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", r, kv.String())
	}
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	values, err := chartutil.ToRenderValues(chrt, vals, opts, caps)
	if err != nil {
		return "", err
	}
	eng := engine.Engine{Strict: true}
	files, err := eng.Render(chrt, values)
	if err != nil {
		return "", err
	}
	for name, text := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			if notes {
				return text, nil
			}
			delete(files, name)
		}
	}
	if notes {
		return "", fmt.Errorf("the chart has no NOTES.txt")
	}
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return "", err
	}
	if len(hooks) > 0 {
		return "", fmt.Errorf("the chart has %d hooks; render-chart does not print hooks", len(hooks))
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, strings.TrimSpace(m.Content))
	}
	return b.String(), nil
}
