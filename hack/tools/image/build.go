// Package image builds and inspects tandem-scheduler's OCI image without a
// container runtime: one layer holding a static binary and the files of
// hack/image/rootfs (passwd and group for the non-root user), no shell, no
// base image, one image per platform under an OCI image index.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the image's user: distroless's "nonroot", also in rootfs/etc/passwd.
const User = "65532:65532"

// Options describe an image to build.
type Options struct {
	// Binaries maps a platform ("linux/amd64") to the binary built for it.
	Binaries map[string]string
	// BinaryPath is where the binary goes in the image; it is the entrypoint.
	BinaryPath string
	// Extra maps a platform to more binaries for it (not entrypoints), by
	// their path in the image: {"linux/amd64": {"/usr/local/bin/x": file}}.
	Extra map[string]map[string]string
	// RootFS is a directory whose files are copied into every image as they are.
	RootFS string
	// Ref names the index in the layout (annotation org.opencontainers.image.ref.name).
	Ref string
	// Labels go into every image config.
	Labels map[string]string
}

// Build writes the image index described by opts into a new OCI layout at dir.
func Build(opts Options, dir string) (v1.ImageIndex, error) {
	if len(opts.Binaries) == 0 {
		return nil, fmt.Errorf("no binaries")
	}
	platforms := make([]string, 0, len(opts.Binaries))
	for p := range opts.Binaries {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		platform, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, err
		}
		img, err := buildImage(opts, *platform, opts.Binaries[p])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: platform},
		})
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	var annotations map[string]string
	if opts.Ref != "" {
		annotations = map[string]string{"org.opencontainers.image.ref.name": opts.Ref}
	}
	return idx, l.AppendIndex(idx, layout.WithAnnotations(annotations))
}

func buildImage(opts Options, platform v1.Platform, binary string) (v1.Image, error) {
	layerTar, err := layerTar(opts.RootFS, binary, opts.BinaryPath, opts.Extra[platform.OS+"/"+platform.Architecture])
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = platform.OS, platform.Architecture, platform.Variant
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = []string{opts.BinaryPath}
	cfg.Config.User = User
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = opts.Labels
	return mutate.ConfigFile(img, cfg)
}

// layerTar returns a tar of rootfs's files plus binary at binaryPath and the
// extra binaries (path in the image -> file), with fixed times and owners so
// that the same inputs give the same digest.
func layerTar(rootfs, binary, binaryPath string, extra map[string]string) ([]byte, error) {
	files := map[string]file{}
	if rootfs != "" {
		err := filepath.WalkDir(rootfs, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(rootfs, p)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			files[filepath.ToSlash(rel)] = file{mode: 0o644, data: data}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	binaries := map[string]string{binaryPath: binary}
	for p, f := range extra {
		binaries[p] = f
	}
	for p, f := range binaries {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		files[strings.TrimPrefix(p, "/")] = file{mode: 0o755, data: data}
	}

	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	written := map[string]bool{}
	for _, name := range names {
		for _, dir := range parents(name) {
			if written[dir] {
				continue
			}
			written[dir] = true
			if err := tw.WriteHeader(header(tar.TypeDir, dir+"/", 0o755, 0)); err != nil {
				return nil, err
			}
		}
		f := files[name]
		if err := tw.WriteHeader(header(tar.TypeReg, name, f.mode, len(f.data))); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type file struct {
	mode int64
	data []byte
}

// parents returns the directories above name, outermost first.
func parents(name string) []string {
	var dirs []string
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	return dirs
}

func header(typ byte, name string, mode int64, size int) *tar.Header {
	return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: int64(size), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
}
