// Command build-image builds tandem-scheduler's multi-platform OCI image into
// an OCI layout directory without a container runtime, then reads it back and
// checks it (entrypoint, non-root user, no shell, static binary per platform).
// hack/build-image.sh runs it twice: tandem-scheduler's image, and
// tandem-pause's (--title tandem-pause --binary-path /usr/local/bin/tandem-pause),
// the placeholders' image:
//
//	build-image --out _output/image --ref v0.40.0-k8s1.37 \
//	  --rootfs hack/image/rootfs \
//	  --binary linux/amd64=_output/bin/linux_amd64/tandem-scheduler \
//	  --binary linux/arm64=_output/bin/linux_arm64/tandem-scheduler \
//	  --extra linux/amd64=/usr/local/bin/tandem-webhook=_output/bin/linux_amd64/tandem-webhook \
//	  --extra linux/arm64=/usr/local/bin/tandem-webhook=_output/bin/linux_arm64/tandem-webhook
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/tandem-scheduler/tandem/hack/tools/image"
)

type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }
func (b binaries) Set(v string) error {
	platform, file, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want os/arch=path, got %q", v)
	}
	b[platform] = file
	return nil
}

// extras parses os/arch=/path/in/image=file.
type extras map[string]map[string]string

func (e extras) String() string { return fmt.Sprint(map[string]map[string]string(e)) }
func (e extras) Set(v string) error {
	platform, rest, ok := strings.Cut(v, "=")
	path, file, ok2 := strings.Cut(rest, "=")
	if !ok || !ok2 || !strings.HasPrefix(path, "/") {
		return fmt.Errorf("want os/arch=/path/in/image=file, got %q", v)
	}
	if e[platform] == nil {
		e[platform] = map[string]string{}
	}
	e[platform][path] = file
	return nil
}

func main() {
	opts := image.Options{Binaries: binaries{}, Extra: extras{}, Labels: map[string]string{}}
	out := flag.String("out", "_output/image", "OCI layout directory to (re)create")
	flag.Var(binaries(opts.Binaries), "binary", "os/arch=path of the binary for that platform (repeatable)")
	flag.Var(extras(opts.Extra), "extra", "os/arch=/path/in/image=file: one more binary for that platform, not the entrypoint (repeatable)")
	flag.StringVar(&opts.BinaryPath, "binary-path", "/usr/local/bin/tandem-scheduler", "the binary's path in the image, the entrypoint")
	flag.StringVar(&opts.RootFS, "rootfs", "hack/image/rootfs", "directory copied into the image")
	flag.StringVar(&opts.Ref, "ref", "", "the index's ref name in the layout (a tag)")
	version := flag.String("version", "", "org.opencontainers.image.version label")
	title := flag.String("title", "tandem-scheduler", "org.opencontainers.image.title label")
	flag.Parse()
	opts.Labels["org.opencontainers.image.title"] = *title
	if *version != "" {
		opts.Labels["org.opencontainers.image.version"] = *version
	}
	if err := run(opts, *out); err != nil {
		fmt.Fprintln(os.Stderr, "build-image:", err)
		os.Exit(1)
	}
}

func run(opts image.Options, out string) error {
	idx, err := image.Build(opts, out)
	if err != nil {
		return err
	}
	sums, err := image.Inspect(out)
	if err != nil {
		return err
	}
	var platforms []string
	for p := range opts.Binaries {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	if err := image.Check(sums, platforms, opts.BinaryPath, opts.Extra); err != nil {
		return fmt.Errorf("the image in %s is not what we meant to build:\n%w", out, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: OCI image index %s (%s), user %s, entrypoint %s\n", out, digest, strings.Join(platforms, ", "), image.User, opts.BinaryPath)
	return nil
}
