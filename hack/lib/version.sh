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

# tandem's own version: the chart's version and appVersion, the manifests'
# app.kubernetes.io/version. It is no longer the Kubernetes version (one tree
# builds for several minors): an image's tag adds the minor it embeds,
# v0.40.0-k8s1.37 (tandem::version::image_tag).
TANDEM_VERSION=v0.40.0

# The Kubernetes versions tandem is built and tested for, one per minor, oldest
# first, the newest patch the module proxy serves: go.mod's (v1.35.4) builds
# from the main module, the others from hack/compat/vX.Y (hack/build-versions.sh).
TANDEM_KUBE_VERSIONS=(v1.34.4 v1.35.4 v1.36.3 v1.37.2)

# tandem::version::of_minor MINOR prints the supported version of MINOR
# (1.36 or v1.36), or fails naming the supported minors.
tandem::version::of_minor() {
  local want="${1#v}" v
  for v in "${TANDEM_KUBE_VERSIONS[@]}"; do
    if [[ "${v}" == "v${want}."* ]]; then
      echo "${v}"
      return 0
    fi
  done
  echo "hack/lib/version.sh: Kubernetes minor '${1}' is not supported (supported: ${TANDEM_KUBE_VERSIONS[*]})" >&2
  return 1
}

# tandem::version::module_dir VERSION prints the directory of the Go module
# that builds tandem against VERSION: the repository for go.mod's version,
# hack/compat/vX.Y for the others.
tandem::version::module_dir() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  if [[ "${1}" == "${TANDEM_GOMOD_KUBE_VERSION}" ]]; then
    echo "${root}"
  elif [[ "${1}" =~ ^v([0-9]+)\.([0-9]+)\. ]]; then
    echo "${root}/hack/compat/v${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
  else
    echo "hack/lib/version.sh: cannot parse version '${1}'" >&2
    return 1
  fi
}

# tandem::version::checked_module_dir VERSION is module_dir, and for a
# hack/compat module also checks that it exists and requires
# k8s.io/kubernetes VERSION (or replaces it with VERSION).
tandem::version::checked_module_dir() {
  local dir pinned
  dir="$(tandem::version::module_dir "${1}")" || return 1
  if [[ "${1}" == "${TANDEM_GOMOD_KUBE_VERSION}" ]]; then
    echo "${dir}"
    return 0
  fi
  if [[ ! -f "${dir}/go.mod" ]]; then
    echo "hack/lib/version.sh: no module ${dir} for ${1}" >&2
    return 1
  fi
  pinned="$(cd "${dir}" && GOWORK=off go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/kubernetes)"
  if [[ "${pinned}" != "${1}" ]]; then
    echo "hack/lib/version.sh: ${dir} requires k8s.io/kubernetes ${pinned}, not ${1}" >&2
    return 1
  fi
  echo "${dir}"
}

# tandem::version::minor VERSION prints the minor of a version like v1.36.3
# (v1.36), or fails.
tandem::version::minor() {
  if [[ ! "${1}" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
    echo "hack/lib/version.sh: want a version like v1.36.3, got '${1}'" >&2
    return 1
  fi
  echo "v${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
}

# tandem::version::tags VERSION prints the Go build tags tandem is built with
# against Kubernetes VERSION, comma-separated, where an API tandem calls
# differs from go.mod's minor (1.35): tandem_k8s_1_34 for 1.34, whose
# framework keeps the plugin interfaces elsewhere; tandem_k8s_ge_1_36 from
# 1.36 on and tandem_k8s_ge_1_37 from 1.37 on, cumulative like Go's release
# tags. docs/versions.md lists what each file behind a tag bridges.
tandem::version::tags() {
  case "${1}" in
    v1.34.*) echo tandem_k8s_1_34 ;;
    v1.35.*) echo "" ;;
    v1.36.*) echo tandem_k8s_ge_1_36 ;;
    v1.37.*) echo tandem_k8s_ge_1_36,tandem_k8s_ge_1_37 ;;
    *)
      echo "hack/lib/version.sh: no build tags known for ${1}: add them to tandem::version::tags" >&2
      return 1
      ;;
  esac
}

# tandem::version::image_tag VERSION prints the image tag of tandem built
# against Kubernetes VERSION: v0.40.0-k8s1.37.
tandem::version::image_tag() {
  if [[ ! "${1}" =~ ^v([0-9]+)\.([0-9]+)\. ]]; then
    echo "hack/lib/version.sh: cannot parse version '${1}'" >&2
    return 1
  fi
  echo "${TANDEM_VERSION}-k8s${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
}

# go.mod's k8s.io/kubernetes: the version the main module builds, whatever
# TANDEM_KUBE_VERSION (the version to stamp) is set to.
TANDEM_GOMOD_KUBE_VERSION="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && GOWORK=off go list -m -f '{{.Version}}' k8s.io/kubernetes)"
if [[ -z "${TANDEM_KUBE_VERSION:-}" ]]; then
  TANDEM_KUBE_VERSION="${TANDEM_GOMOD_KUBE_VERSION}"
fi
TANDEM_LDFLAGS="$(tandem::version::ldflags "${TANDEM_KUBE_VERSION}")"
export TANDEM_KUBE_VERSION TANDEM_LDFLAGS TANDEM_VERSION
