#!/usr/bin/env bash
# Builds tandem-scheduler and tandem-webhook once per supported Kubernetes
# minor, from this one source tree, each with kube-apiserver of the same
# version for the integration tests:
#
#   hack/build-versions.sh [VERSION...]    default: TANDEM_KUBE_VERSIONS (hack/lib/version.sh)
#
# into bin/vX.Y/: tandem-scheduler, tandem-webhook, kube-apiserver and a
# symlink to bin/etcd (one etcd serves every minor), a complete bin directory
# for harness/controlplane (TANDEM_BIN_DIR=bin/vX.Y; make test-versions).
#
# go.mod's version (v1.35.4) builds from the main module. Every other version
# builds from the Go module hack/compat/vX.Y, which requires tandem itself
# (replaced by this tree) and replaces every k8s.io module with that minor's:
# the same packages, compiled against another kube-scheduler. Where the
# scheduler framework differs between minors, the difference sits behind
# build-tagged files (docs/versions.md lists them); no file is copied.
#
# Each binary is stamped with its version (hack/lib/version.sh), so
# `bin/vX.Y/tandem-scheduler --version` prints the kube-scheduler it is.
# Builds run one after the other (~3 GB of RAM each); a cold module cache
# downloads each minor's modules once (a few minutes each).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
source hack/lib/version.sh

versions=("$@")
if [[ ${#versions[@]} -eq 0 ]]; then
  versions=("${TANDEM_KUBE_VERSIONS[@]}")
fi

if [[ ! -x bin/etcd ]]; then
  hack/build-control-plane.sh
fi

for version in "${versions[@]}"; do
  minor="$(tandem::version::minor "${version}")"
  out="${ROOT}/bin/${minor}"
  mkdir -p "${out}"
  ldflags="$(tandem::version::ldflags "${version}")"
  start=${SECONDS}

  dir="$(tandem::version::checked_module_dir "${version}")"
  echo "building bin/${minor}/ (${version})"
  (cd "${dir}" && GOWORK=off go build -tags "$(tandem::version::tags "${version}")" -ldflags "${ldflags}" -o "${out}/" \
    github.com/tandem-scheduler/tandem/cmd/tandem-scheduler \
    github.com/tandem-scheduler/tandem/cmd/tandem-webhook \
    k8s.io/kubernetes/cmd/kube-apiserver)
  # Real nodes run go.mod's kubelet against every minor's apiserver.
  for name in etcd kubelet tandem-pause-image.tar; do
    ln -sfn "../${name}" "${out}/${name}"
  done

  got="$("${out}/tandem-scheduler" --version)"
  if [[ "${got}" != "Kubernetes ${version}" ]]; then
    echo "hack/build-versions.sh: bin/${minor}/tandem-scheduler reports '${got}', want Kubernetes ${version}" >&2
    exit 1
  fi
  echo "built bin/${minor}/ in $((SECONDS - start))s: tandem-scheduler --version: ${got}"
done
