package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const binaryPath = "/usr/local/bin/tandem-scheduler"

var platforms = []string{"linux/amd64", "linux/arm64"}

// buildHello cross-compiles testdata/hello statically for each platform.
func buildHello(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]string{}
	for _, p := range platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		out := filepath.Join(dir, goos+"_"+goarch, "hello")
		cmd := exec.Command("go", "build", "-o", out, "./testdata/hello")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building hello for %s: %v\n%s", p, err, b)
		}
		bins[p] = out
	}
	return bins
}

const extraPath = "/usr/local/bin/tandem-webhook"

// options is an image of bins with each platform's binary also at extraPath.
func options(bins map[string]string) Options {
	return Options{Binaries: bins, BinaryPath: binaryPath, Extra: extra(bins), RootFS: "../../image/rootfs", Ref: "v0.0.0-test"}
}

func extra(bins map[string]string) map[string]map[string]string {
	e := map[string]map[string]string{}
	for p, f := range bins {
		e[p] = map[string]string{extraPath: f}
	}
	return e
}

// Build writes a two-platform index whose images run the static binary
// as the non-root user, with nothing but the binary, passwd and group.
func TestBuildAndInspect(t *testing.T) {
	bins := buildHello(t)
	dir := filepath.Join(t.TempDir(), "layout")
	idx, err := Build(options(bins), dir)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(sums, platforms, binaryPath, extra(bins)); err != nil {
		t.Errorf("Check: %v", err)
	}
	var got []string
	for _, s := range sums {
		got = append(got, s.Platform)
		if diff := cmp.Diff([]string{"etc/group", "etc/passwd", "usr/local/bin/tandem-scheduler", "usr/local/bin/tandem-webhook"}, s.Files); diff != "" {
			t.Errorf("%s files (-want,+got):\n%s", s.Platform, diff)
		}
		if s.User != "65532:65532" || !slices.Equal(s.Entrypoint, []string{binaryPath}) {
			t.Errorf("%s: user %q entrypoint %q", s.Platform, s.User, s.Entrypoint)
		}
	}
	if !slices.Equal(got, platforms) {
		t.Errorf("platforms %v, want %v", got, platforms)
	}

	// The same inputs give the same digest.
	again, err := Build(options(bins), filepath.Join(t.TempDir(), "again"))
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := idx.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("rebuilding gave index %s, then %s: not reproducible", d1, d2)
	}
}

// Check rejects a binary built for another platform, a shell and a missing
// extra binary.
func TestCheckRejects(t *testing.T) {
	bins := buildHello(t)
	swapped := map[string]string{"linux/amd64": bins["linux/arm64"], "linux/arm64": bins["linux/amd64"]}
	rootfs := t.TempDir()
	for _, f := range []string{"etc/passwd", "bin/sh"} {
		src, _ := os.ReadFile(filepath.Join("../../image/rootfs", f))
		if err := os.MkdirAll(filepath.Join(rootfs, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rootfs, f), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := options(swapped)
	opts.RootFS = rootfs
	dir := filepath.Join(t.TempDir(), "layout")
	if _, err := Build(opts, dir); err != nil {
		t.Fatal(err)
	}
	sums, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = Check(sums, append(platforms, "linux/s390x"), binaryPath, map[string]map[string]string{"linux/amd64": {"/usr/local/bin/missing": "x"}})
	if err == nil {
		t.Fatal("Check accepted swapped binaries, a shell, a missing binary and a missing platform")
	}
	for _, want := range []string{
		"linux/amd64: binary is for EM_AARCH64, want EM_X86_64",
		"linux/arm64: binary is for EM_X86_64, want EM_AARCH64",
		"linux/amd64: has a shell: bin/sh",
		"linux/amd64: has no /usr/local/bin/missing",
		"platforms [linux/amd64 linux/arm64], want [linux/amd64 linux/arm64 linux/s390x]",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check error %q lacks %q", err, want)
		}
	}
}
