package integration

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
)

// The install manifests, rendered by the same Go code that `helm template`
// and `kubectl kustomize` run (hack/tools, its own module).
const (
	chartDir         = "manifests/charts/tandem-scheduler"
	kustomizeBase    = "manifests/kustomize/base"
	kustomizeDefault = "manifests/kustomize/default"
	// The release the kustomize base is rendered from.
	releaseNamespace = "tandem-system"
	releaseName      = "tandem-scheduler"
)

// repoPath is path below the repository root.
func repoPath(t testing.TB, path string) string {
	t.Helper()
	root, err := controlplane.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, path)
}

// runTool runs `go run ./cmd/<name> args...` in hack/tools and returns its stdout.
func runTool(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	out, stderr, err := tryTool(t, name, args...)
	if err != nil {
		t.Fatalf("go run ./cmd/%s %v (in hack/tools): %v\n%s", name, args, err, stderr)
	}
	return out
}

// tryTool is runTool for a run that may fail: stdout, stderr and the error.
func tryTool(t testing.TB, name string, args ...string) (stdout []byte, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", "./cmd/" + name}, args...)...)
	cmd.Dir = repoPath(t, "hack/tools")
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	stdout, err = cmd.Output()
	return stdout, errBuf.String(), err
}

// renderChart renders the chart as release tandem-scheduler in tandem-system
// (later flags win), e.g. renderChart(t, "--set", "replicaCount=3").
func renderChart(t testing.TB, args ...string) []*unstructured.Unstructured {
	t.Helper()
	args = append([]string{"--release", releaseName, "--namespace", releaseNamespace}, args...)
	return parseObjects(t, runTool(t, "render-chart", append(args, repoPath(t, chartDir))...))
}

// kustomizeBuild builds the kustomization in dir, relative to the repository.
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	return parseObjects(t, runTool(t, "kustomize-build", repoPath(t, dir)))
}

// parseObjects splits a YAML stream into objects, skipping empty documents.
func parseObjects(t testing.TB, data []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("parsing %q: %v", doc, err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// byKey indexes objects by "Kind/namespace/name".
func byKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	return m
}

// object returns the object with key from objs converted to T.
func object[T any](t *testing.T, objs map[string]*unstructured.Unstructured, key string) *T {
	t.Helper()
	u, ok := objs[key]
	if !ok {
		t.Fatalf("no %s among the rendered objects", key)
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
