#!/usr/bin/env bash
# Version stamping shared by every binary we build (kube-apiserver, tandem-scheduler).
#
# Source this file; it defines
#   TANDEM_KUBE_VERSION  the Kubernetes version we compile against, e.g. v1.35.4
#                        (read from go.mod; override by exporting it first)
#   TANDEM_LDFLAGS       the -ldflags value stamping that version
#   tandem::version::ldflags [VERSION]  prints the -ldflags value for VERSION
#
# Without these ldflags the binaries report v0.0.0-master and clients such as
# `kubectl version` complain. No build date or commit is stamped on purpose:
# a changing value would defeat go build's cache.

tandem::version::ldflags() {
  local version="${1:-${TANDEM_KUBE_VERSION}}"
  if [[ ! "${version}" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+ ]]; then
    echo "hack/lib/version.sh: cannot parse version '${version}'" >&2
    return 1
  fi
  local major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}"
  local flags=() pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=(
      "-X ${pkg}.gitVersion=${version}"
      "-X ${pkg}.gitMajor=${major}"
      "-X ${pkg}.gitMinor=${minor}"
      "-X ${pkg}.gitTreeState=clean"
    )
  done
  echo "${flags[*]}"
}

if [[ -z "${TANDEM_KUBE_VERSION:-}" ]]; then
  TANDEM_KUBE_VERSION="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
fi
TANDEM_LDFLAGS="$(tandem::version::ldflags "${TANDEM_KUBE_VERSION}")"
export TANDEM_KUBE_VERSION TANDEM_LDFLAGS
