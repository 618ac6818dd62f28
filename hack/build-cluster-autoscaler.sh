#!/usr/bin/env bash
# Builds the real Cluster Autoscaler with only its KWOK cloud provider (fake
# nodes made from node templates in a ConfigMap) into bin/cluster-autoscaler,
# for the simulator and the local control plane:
#
#   hack/build-cluster-autoscaler.sh SRC
#
# SRC is a checkout of kubernetes/autoscaler (the repository root, or its
# cluster-autoscaler/ directory). Without SRC, or when SRC does not exist, the
# script clones CA_TAG (default cluster-autoscaler-1.35.2) into SRC (default
# _output/autoscaler-src), which needs access to the code host. It cannot be a
# Go dependency of ours: its tags (cluster-autoscaler-1.35.2) are no module
# versions of k8s.io/autoscaler/cluster-autoscaler, its go.mod replaces every
# k8s.io module, and the module proxy does not serve it. The build uses the checkout's own go.mod (our go.mod
# and go.sum are neither read nor edited) and never copies its code into ours.
#
# bin/cluster-autoscaler.version records the version the binary reports
# (version.ClusterAutoscalerVersion of the checkout). Cold: about 4 minutes on
# 2 cores (245 s measured, modules downloaded); an unchanged rebuild takes
# seconds (go build's cache).
set -o errexit -o nounset -o pipefail

CA_TAG="${CA_TAG:-cluster-autoscaler-1.35.2}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="${1:-${CA_SRC:-${ROOT}/_output/autoscaler-src}}"

if [[ ! -d "${SRC}" ]]; then
  echo "hack/build-cluster-autoscaler.sh: ${SRC} does not exist; cloning kubernetes/autoscaler ${CA_TAG} into it"
  git clone --quiet --depth 1 --branch "${CA_TAG}" https://github.com/kubernetes/autoscaler "${SRC}"
fi
SRC="$(cd "${SRC}" && pwd)"
if [[ -f "${SRC}/cluster-autoscaler/go.mod" ]]; then
  SRC="${SRC}/cluster-autoscaler"
fi
if ! grep -q '^module k8s.io/autoscaler/cluster-autoscaler$' "${SRC}/go.mod" 2>/dev/null; then
  echo "hack/build-cluster-autoscaler.sh: ${SRC} is not a checkout of kubernetes/autoscaler (no cluster-autoscaler/go.mod)" >&2
  exit 1
fi
if [[ ! -d "${SRC}/cloudprovider/kwok" ]]; then
  echo "hack/build-cluster-autoscaler.sh: ${SRC} has no KWOK cloud provider (cluster-autoscaler 1.29 or newer has it)" >&2
  exit 1
fi
version="$(sed -n 's/^const ClusterAutoscalerVersion = "\(.*\)"$/\1/p' "${SRC}/version/version.go")"
if [[ -z "${version}" ]]; then
  echo "hack/build-cluster-autoscaler.sh: no ClusterAutoscalerVersion in ${SRC}/version/version.go" >&2
  exit 1
fi

mkdir -p "${ROOT}/bin"
start=${SECONDS}
echo "building bin/cluster-autoscaler ${version} (KWOK provider only) from ${SRC}"
# -tags kwok: the cloud provider builder compiles only the providers named by
# tags. The checkout's go.mod and go.sum are used as they are (readonly).
(cd "${SRC}" && GOFLAGS=-mod=readonly go build -buildvcs=false -tags kwok -o "${ROOT}/bin/cluster-autoscaler" .)
echo "${version}" > "${ROOT}/bin/cluster-autoscaler.version"
echo "built bin/cluster-autoscaler ${version} in $((SECONDS - start))s"
