#!/usr/bin/env bash
# Builds Karpenter's KWOK cloud provider (the real Karpenter controllers with a
# fake cloud whose instances are Node objects) for the local control plane:
#   bin/karpenter-kwok   from sigs.k8s.io/karpenter/kwok at KARPENTER_VERSION
#   bin/karpenter-crds/  its CRDs (NodePool, NodeClaim, NodeOverlay,
#                        KWOKNodeClass), copied from the module cache
#   bin/karpenter-kwok-instance-types.json
#                        the KWOK provider's instance types (its embedded
#                        catalogue), which harness/karpenter extends
# Karpenter is its own module: it is built from its own go.mod (as
# `go install sigs.k8s.io/karpenter/kwok@VERSION` would), not from ours, so our
# module graph does not change. v1.14+ need a newer Go than ours: keep v1.13.x.
# go build is always called: its cache makes an unchanged rebuild take seconds;
# a cold build takes ~1.5 minutes on 2 cores.
set -o errexit -o nounset -o pipefail

KARPENTER_VERSION="${KARPENTER_VERSION:-v1.13.0}"
MODULE=sigs.k8s.io/karpenter

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
mkdir -p bin

start=${SECONDS}
# Outside any module, so that our go.mod and go.sum are neither read nor edited.
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
dir="$(cd "${scratch}" && go mod download -json "${MODULE}@${KARPENTER_VERSION}" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [[ -z "${dir}" || ! -d "${dir}/kwok" ]]; then
  echo "hack/build-karpenter.sh: ${MODULE}@${KARPENTER_VERSION} has no kwok/ in the module cache" >&2
  exit 1
fi

echo "building bin/karpenter-kwok from ${MODULE}/kwok ${KARPENTER_VERSION}"
# The module cache is read-only and holds no VCS data; -mod=readonly keeps go
# from trying to update Karpenter's go.mod.
(cd "${dir}" && go build -mod=readonly -buildvcs=false \
  -ldflags "-X ${MODULE}/pkg/operator.Version=${KARPENTER_VERSION}" \
  -o "${ROOT}/bin/karpenter-kwok" ./kwok)

rm -rf bin/karpenter-crds
mkdir -p bin/karpenter-crds
cp "${dir}"/pkg/apis/crds/*.yaml "${dir}"/kwok/apis/crds/*.yaml bin/karpenter-crds/
chmod u+w bin/karpenter-crds/*.yaml
echo "${KARPENTER_VERSION}" > bin/karpenter-crds/VERSION
rm -f bin/karpenter-kwok-instance-types.json
cp "${dir}"/kwok/cloudprovider/instance_types.json bin/karpenter-kwok-instance-types.json
chmod u+w bin/karpenter-kwok-instance-types.json
echo "built bin/karpenter-kwok, bin/karpenter-kwok-instance-types.json and bin/karpenter-crds/ ($(ls bin/karpenter-crds/*.yaml | wc -l) CRDs) in $((SECONDS - start))s"
