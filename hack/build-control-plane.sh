#!/usr/bin/env bash
# Builds the local control plane binaries into bin/ (repository root):
#   bin/etcd            from go.etcd.io/etcd/server/v3 (a `tool` in go.mod, so the
#                       version is the one in our module graph)
#   bin/kube-apiserver  from k8s.io/kubernetes/cmd/kube-apiserver, version-stamped
# go build is always called: its cache makes an unchanged rebuild take seconds.
# A cold kube-apiserver build takes minutes and ~3 GB of RAM.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
source hack/lib/version.sh

mkdir -p bin

build() {
  local out="$1" pkg="$2"
  shift 2
  local version
  version="$(go list -m -f '{{.Version}}' "${pkg%%/cmd/*}" 2>/dev/null || true)"
  echo "building ${out} from ${pkg}${version:+ ${version}}"
  local start=${SECONDS}
  go build -o "${out}" "$@" "${pkg}"
  echo "built ${out} in $((SECONDS - start))s"
}

build bin/etcd go.etcd.io/etcd/server/v3
build bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver -ldflags "${TANDEM_LDFLAGS}"
