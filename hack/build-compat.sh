#!/usr/bin/env bash
# Builds kube-apiserver of newer Kubernetes versions, for running tandem (built
# against 1.35) against the apiservers users run: the version-skew policy lets
# a scheduler be one minor older than its apiserver.
#
#   hack/build-compat.sh [VERSION...]     default: v1.36.3 v1.37.2
#
# VERSION vX.Y.Z is built from the Go module hack/compat/vX.Y (which must
# require k8s.io/kubernetes vX.Y.Z), version-stamped like
# hack/build-control-plane.sh does, into bin/compat/VERSION/kube-apiserver.
# bin/compat/VERSION/ also gets symlinks to ../../etcd and
# ../../tandem-scheduler (one etcd for every version, and the 1.35 scheduler),
# so that it is a complete bin directory for harness/controlplane: point
# TANDEM_BIN_DIR at it. go.mod's own version (v1.35.4) is skipped: it is bin/
# (hack/build-control-plane.sh). Builds run one after the other (~3 GB of RAM each);
# go build's cache makes an unchanged rebuild take seconds.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
source hack/lib/version.sh

DEFAULT_VERSIONS=(v1.36.3 v1.37.2)
versions=("$@")
if [[ ${#versions[@]} -eq 0 ]]; then
  versions=("${DEFAULT_VERSIONS[@]}")
fi

for version in "${versions[@]}"; do
  if [[ ! "${version}" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
    echo "hack/build-compat.sh: want a version like v1.36.3, got '${version}'" >&2
    exit 1
  fi
  if [[ "${version}" == "${TANDEM_KUBE_VERSION}" ]]; then
    echo "${version} is go.mod's version: hack/build-control-plane.sh builds it into bin/"
    continue
  fi
  module="$(tandem::version::checked_module_dir "${version}")"

  out="${ROOT}/bin/compat/${version}"
  mkdir -p "${out}"
  echo "building bin/compat/${version}/kube-apiserver from ${module#"${ROOT}/"}"
  start=${SECONDS}
  (cd "${module}" && GOWORK=off go build -o "${out}/kube-apiserver" \
    -ldflags "$(tandem::version::ldflags "${version}")" k8s.io/kubernetes/cmd/kube-apiserver)
  echo "built bin/compat/${version}/kube-apiserver in $((SECONDS - start))s"

  for name in etcd tandem-scheduler kubelet tandem-pause-image.tar; do
    ln -sfn "../../${name}" "${out}/${name}"
    if [[ ! -e "${out}/${name}" ]]; then
      echo "note: bin/${name} is missing (run make control-plane build kubelet): bin/compat/${version}/${name} dangles" >&2
    fi
  done
done
