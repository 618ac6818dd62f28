package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Summary is what Inspect found in one platform's image.
type Summary struct {
	Platform   string // os/arch
	Entrypoint []string
	User       string
	// Files are the paths of every regular file in the layers.
	Files []string
	// Passwd is /etc/passwd's content.
	Passwd string
	// Machine is the ELF machine of the entrypoint binary; Static is true
	// when the binary has no program interpreter (no dynamic loader).
	Machine elf.Machine
	Static  bool
}

// Inspect reads every image of the index in the OCI layout at dir.
func Inspect(dir string) ([]Summary, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	// The layout's own index points at the image index Build appended.
	top, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(top.Manifests) != 1 {
		return nil, fmt.Errorf("layout %s holds %d entries, want one image index", dir, len(top.Manifests))
	}
	ii, err := idx.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		return nil, err
	}
	im, err := ii.IndexManifest()
	if err != nil {
		return nil, err
	}
	var sums []Summary
	for _, desc := range im.Manifests {
		img, err := ii.Image(desc.Digest)
		if err != nil {
			return nil, err
		}
		s, err := inspectImage(img)
		if err != nil {
			return nil, err
		}
		if desc.Platform == nil || desc.Platform.OS+"/"+desc.Platform.Architecture != s.Platform {
			return nil, fmt.Errorf("index entry %s: platform %v, but its config says %s", desc.Digest, desc.Platform, s.Platform)
		}
		sums = append(sums, s)
	}
	return sums, nil
}

func inspectImage(img v1.Image) (Summary, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return Summary{}, err
	}
	s := Summary{Platform: cfg.OS + "/" + cfg.Architecture, Entrypoint: cfg.Config.Entrypoint, User: cfg.Config.User}
	layers, err := img.Layers()
	if err != nil {
		return Summary{}, err
	}
	var binary []byte
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return Summary{}, err
		}
		err = walkTar(rc, func(name string, r io.Reader) error {
			s.Files = append(s.Files, name)
			var err error
			switch {
			case name == "etc/passwd":
				var b []byte
				b, err = io.ReadAll(r)
				s.Passwd = string(b)
			case len(s.Entrypoint) > 0 && name == strings.TrimPrefix(s.Entrypoint[0], "/"):
				binary, err = io.ReadAll(r)
			}
			return err
		})
		rc.Close()
		if err != nil {
			return Summary{}, err
		}
	}
	if binary == nil {
		return s, nil
	}
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return Summary{}, fmt.Errorf("entrypoint %s: %w", s.Entrypoint[0], err)
	}
	s.Machine = f.Machine
	s.Static = !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	return s, nil
}

func walkTar(r io.Reader, fn func(name string, r io.Reader) error) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg || hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink {
			if err := fn(path.Clean(strings.TrimPrefix(hdr.Name, "/")), tr); err != nil {
				return err
			}
		}
	}
}

var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

var shells = []string{"sh", "bash", "ash", "dash", "busybox"}

// Check returns every way sums differ from a static, non-root, shell-less
// image per platform in platforms whose entrypoint is binaryPath and that
// holds the extra binaries of its platform (os/arch -> path in the image ->
// file).
func Check(sums []Summary, platforms []string, binaryPath string, extra map[string]map[string]string) error {
	var errs []error
	var got []string
	for _, s := range sums {
		got = append(got, s.Platform)
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf(s.Platform+": "+format, args...))
		}
		if !slices.Equal(s.Entrypoint, []string{binaryPath}) {
			fail("entrypoint %q, want [%q]", s.Entrypoint, binaryPath)
		}
		uid, _, _ := strings.Cut(s.User, ":")
		if uid == "" || uid == "0" || uid == "root" {
			fail("user %q, want a non-root user", s.User)
		} else if !strings.Contains(s.Passwd, ":x:"+uid+":") {
			fail("user %q is not in /etc/passwd", s.User)
		}
		for p := range extra[s.Platform] {
			if !slices.Contains(s.Files, strings.TrimPrefix(p, "/")) {
				fail("has no %s", p)
			}
		}
		for _, f := range s.Files {
			if slices.Contains(shells, path.Base(f)) {
				fail("has a shell: %s", f)
			}
		}
		arch := s.Platform[strings.Index(s.Platform, "/")+1:]
		if want, ok := machines[arch]; !ok || s.Machine != want {
			fail("binary is for %v, want %v", s.Machine, want)
		}
		if !s.Static {
			fail("binary is dynamically linked")
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(platforms))
	if !slices.Equal(got, want) {
		errs = append(errs, fmt.Errorf("platforms %v, want %v", got, want))
	}
	return errors.Join(errs...)
}
