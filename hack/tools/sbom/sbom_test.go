package sbom

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

// The document lists the binary with its digest, the toolchain and every
// module the build information names, and is the same every time it is
// written for the same binary and time.
func TestForAGoBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sbom")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/tandem-scheduler/tandem/hack/tools/cmd/sbom")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	created := time.Unix(1764892800, 0)
	doc, err := For(bin, "sbom_linux_amd64", "v1.2.3", created, "https://example.test/spdx/")
	if err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2025-12-05T00:00:00Z" {
		t.Errorf("version %q created %q", doc.SPDXVersion, doc.CreationInfo.Created)
	}
	bin0 := doc.Packages[0]
	if bin0.Name != "sbom_linux_amd64" || len(bin0.Checksums) != 1 || len(bin0.Checksums[0].Value) != 64 ||
		!strings.HasSuffix(doc.DocumentNamespace, "/sbom_linux_amd64-"+bin0.Checksums[0].Value) || strings.Contains(doc.DocumentNamespace, "//sbom") {
		t.Errorf("binary package %+v, namespace %q", bin0, doc.DocumentNamespace)
	}
	var purls []string
	for _, p := range doc.Packages[1:] {
		purls = append(purls, p.ExternalRefs[0].Locator)
	}
	if bin0.VersionInfo != "v1.2.3" {
		t.Errorf("binary version %q, want the one given", bin0.VersionInfo)
	}
	for _, want := range []string{"pkg:golang/github.com/tandem-scheduler/tandem/hack/tools@v1.2.3"} {
		if !slices.Contains(purls, want) {
			t.Errorf("purls %q lack %q", purls, want)
		}
	}
	if !slices.ContainsFunc(purls, func(p string) bool { return strings.HasPrefix(p, "pkg:golang/stdlib@1.") }) {
		t.Errorf("purls %q lack the Go toolchain", purls)
	}
	if len(doc.Relationships) != len(doc.Packages) {
		t.Errorf("%d relationships for %d packages: want DESCRIBES the binary and CONTAINS each other", len(doc.Relationships), len(doc.Packages))
	}
	first, err := doc.JSON()
	if err != nil {
		t.Fatal(err)
	}
	again, err := For(bin, "sbom_linux_amd64", "v1.2.3", created, "https://example.test/spdx/")
	if err != nil {
		t.Fatal(err)
	}
	second, _ := again.JSON()
	if !bytes.Equal(first, second) {
		t.Error("two documents of the same binary differ")
	}
}

// A file that is not a Go binary has no build information: an error, not
// an empty document.
func TestForNotAGoBinary(t *testing.T) {
	f := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := For(f, "script", "", time.Unix(0, 0), "https://example.test"); err == nil {
		t.Error("no error for a file without Go build information")
	}
}

// Found in review: a module replaced by a directory of the same tree
// (./contract) was named by that directory, with a purl no tool resolves.
// It keeps its module path, at the binary's version; a module replaced by
// another module is that one.
func TestLocalReplacesKeepTheirModulePath(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/tandem-scheduler/tandem", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/tandem-scheduler/tandem/contract", Version: "v0.0.0-00010101000000-000000000000", Replace: &debug.Module{Path: "./contract"}},
			{Path: "k8s.io/api", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/api", Version: "v0.35.4"}},
		},
	}
	doc := fromInfo(info, []byte("binary"), "tandem-scheduler", "v0.41.0", time.Unix(0, 0), "https://example.test")
	var got []string
	for _, p := range doc.Packages[1:] {
		got = append(got, p.ExternalRefs[0].Locator)
	}
	want := []string{"pkg:golang/stdlib@1.26.8", "pkg:golang/github.com/tandem-scheduler/tandem@v0.41.0",
		"pkg:golang/github.com/tandem-scheduler/tandem/contract@v0.41.0", "pkg:golang/k8s.io/api@v0.35.4"}
	if !slices.Equal(got, want) {
		t.Errorf("purls %q, want %q", got, want)
	}
}
