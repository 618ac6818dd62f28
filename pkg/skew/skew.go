// Package skew checks a tandem-scheduler build against the kube-apiserver it
// talks to by Kubernetes' version-skew policy: kube-scheduler may be as new
// as kube-apiserver or one minor older, never newer and never further
// behind. tandem-scheduler is kube-scheduler of the minor it was built
// with, so the same rule holds; a build per minor (make build-versions)
// serves every apiserver.
package skew

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
)

// Check returns nil if a scheduler of version build may serve an apiserver
// of version server, and an error that says which build to run if not.
// Versions are Kubernetes git versions (v1.35.4, v1.37.0-rc.1+abc); an
// unstamped build (v0.0.0-master) is not checked.
func Check(build, server string) error {
	b, err := version.ParseGeneric(build)
	if err != nil {
		return fmt.Errorf("cannot read this build's version %q: %w", build, err)
	}
	if b.Major() == 0 {
		return nil
	}
	s, err := version.ParseGeneric(server)
	if err != nil {
		return fmt.Errorf("cannot read kube-apiserver's version %q: %w", server, err)
	}
	if s.Major() == b.Major() && (s.Minor() == b.Minor() || s.Minor() == b.Minor()+1) {
		return nil
	}
	return fmt.Errorf("kube-apiserver %s is outside the version-skew policy of this tandem-scheduler, built as kube-scheduler v%d.%d: "+
		"a scheduler may be as new as its apiserver or one minor older; run the tandem-scheduler build for v%d.%d (make build-versions, or the image tagged for that minor)",
		server, b.Major(), b.Minor(), s.Major(), s.Minor())
}
