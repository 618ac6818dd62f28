#!/usr/bin/env bash
# Builds a small release twice (the newest supported Kubernetes minor: make
# build and make test build go.mod's, and the newest is where the framework
# moves, so its build is the one that breaks first; images for linux/amd64;
# kubectl-tandem for linux/amd64 and darwin/arm64) and fails unless the two
# are the same byte for byte, every checksum holds, and Helm loads the
# packaged chart. make test runs it; make release builds the whole release
# the same way.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

source hack/lib/version.sh
newest="${TANDEM_KUBE_VERSIONS[-1]#v}"
export VERSION="${VERSION:-v0.0.0}" RELEASE_MINORS="${RELEASE_MINORS:-${newest%.*}}" RELEASE_IMAGE_PLATFORMS="${RELEASE_IMAGE_PLATFORMS:-linux/amd64}"
minor="${RELEASE_MINORS%% *}"
# Both systems and both architectures, not every pair: each is a cold build.
export RELEASE_KUBECTL_PLATFORMS="${RELEASE_KUBECTL_PLATFORMS:-linux/amd64 darwin/arm64}"
base="_output/test-release"
rm -rf "${base}"
for run in a b; do
  RELEASE_DIR="${base}/${run}" hack/release.sh
done
if ! diff -r "${base}/a" "${base}/b"; then
  echo "hack/test-release.sh: two builds of release ${VERSION} differ" >&2
  exit 1
fi
(cd "${base}/a" && sha256sum --quiet -c SHA256SUMS)
want=(SHA256SUMS kubectl-tandem.yaml "tandem-scheduler-${VERSION#v}.tgz")
for f in "${want[@]}" images/tandem-scheduler_"${VERSION}"-k8s${minor}.oci.tar images/tandem-pause_"${VERSION}"-k8s${minor}.oci.tar \
  kubectl-tandem_linux_amd64.tar.gz kubectl-tandem_darwin_arm64.tar.gz sbom/kubectl-tandem_linux_amd64.spdx.json sbom/tandem-scheduler_"${VERSION}"-k8s${minor}_linux_amd64.spdx.json; do
  if [[ ! -s "${base}/a/${f}" ]]; then
    echo "hack/test-release.sh: the release lacks ${f}" >&2
    exit 1
  fi
done
# Helm loads the packaged chart and renders it.
(cd hack/tools && go run ./cmd/render-chart "${ROOT}/${base}/a/tandem-scheduler-${VERSION#v}.tgz" > /dev/null)
# The OCI layout in the image archive names the tag.
if ! tar -xOf "${base}/a/images/tandem-scheduler_${VERSION}-k8s${minor}.oci.tar" ./index.json |
  grep -q "\"org.opencontainers.image.ref.name\": *\"${VERSION}-k8s${minor}\""; then
  echo "hack/test-release.sh: the image archive's index.json does not name the tag ${VERSION}-k8s${minor}" >&2
  exit 1
fi
echo "release ${VERSION} built twice, the same: $(wc -l < "${base}/a/SHA256SUMS") files"
