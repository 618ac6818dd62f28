#!/usr/bin/env bash
# Builds a release of tandem into _output/release/VERSION, without a
# container runtime or a network beyond the Go module proxy:
#
#   images/tandem-scheduler_VERSION-k8sMINOR.oci.tar   per Kubernetes minor: the
#                                     multi-platform OCI image (tandem-scheduler and
#                                     tandem-webhook) as an OCI layout in a tar
#   images/tandem-pause_VERSION-k8sMINOR.oci.tar       the placeholders' image, same tag
#   tandem-scheduler-X.Y.Z.tgz        the Helm chart, version X.Y.Z, appVersion VERSION
#   kubectl-tandem_OS_ARCH.tar.gz     the kubectl plugin (and LICENSE), linux and darwin, amd64 and arm64
#   kubectl-tandem.yaml               its krew plugin manifest (RELEASE_URL: where the archives will be)
#   sbom/NAME.spdx.json               an SPDX document per binary
#   BUILD                             the version, the commit and the Go toolchain built with
#   SHA256SUMS                        the sha256 of every file above
#
# Every file is the same, byte for byte, each time it is built from the same
# commit with the same Go toolchain (make test-release builds a small one
# twice and compares): binaries are built with -trimpath, no VCS stamp and no
# build ID, archives with sorted names, owner 0 and the commit's time
# (SOURCE_DATE_EPOCH), images with time zero.
#
#   VERSION=v0.41.0 hack/release.sh                    # everything (every minor: long, and a cold
#                                                      # module cache downloads each minor's modules)
#   RELEASE_MINORS=1.35 RELEASE_IMAGE_PLATFORMS=linux/amd64 hack/release.sh   # a smaller one
#   hack/release.sh chart DIR                          # only the packaged chart, into DIR
#
#   VERSION                  vX.Y.Z (default hack/lib/version.sh's TANDEM_VERSION)
#   RELEASE_DIR              default _output/release/VERSION (emptied first; under _output or /tmp)
#   RELEASE_MINORS           default every supported minor (hack/lib/version.sh)
#   RELEASE_IMAGE_PLATFORMS  default "linux/amd64 linux/arm64"
#   RELEASE_KUBECTL_PLATFORMS default "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
#   RELEASE_URL              where the files will be downloadable, for the krew manifest and
#                            the SBOMs' namespace (default the project's GitHub release of VERSION)
#   SOURCE_DATE_EPOCH        default the commit's time
#
# docs/install.md ("From a release") says how to publish and install them.
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
source hack/lib/version.sh

VERSION="${VERSION:-${TANDEM_VERSION}}"
if [[ ! "${VERSION}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "hack/release.sh: VERSION must look like v0.41.0, got '${VERSION}'" >&2
  exit 1
fi
CHART_VERSION="${VERSION#v}"
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
export SOURCE_DATE_EPOCH
# What else goes into a binary, fixed whoever builds: no VCS stamp (an
# untracked file would mark it modified), the baseline instruction sets.
# The Go toolchain is the one on PATH; BUILD names it and the commit.
export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-buildvcs=false" GOAMD64=v1 GOARM64=v8.0
RELEASE_URL="${RELEASE_URL:-https://github.com/tandem-scheduler/tandem/releases/download/${VERSION}}"

# archive DIR OUT [NAMES...]: a tar of NAMES (default .) under DIR,
# independent of the machine: sorted, owner 0, the commit's time, modes
# from the executable bit only.
archive() {
  local dir="$1" out="$2"
  shift 2
  tar --sort=name --format=gnu --owner=0 --group=0 --numeric-owner \
    --mtime="@${SOURCE_DATE_EPOCH}" --mode='u=rwX,go=rX' \
    -C "${dir}" -cf "${out}" "${@:-.}"
}

# package_chart DIR: the chart as tandem-scheduler-X.Y.Z.tgz in DIR, its
# version and appVersion set to the release's.
package_chart() {
  local out="$1" tmp
  tmp="$(mktemp -d)"
  cp -R manifests/charts/tandem-scheduler "${tmp}/tandem-scheduler"
  sed -i -e "s/^version: .*/version: ${CHART_VERSION}/" -e "s/^appVersion: .*/appVersion: ${VERSION}/" \
    "${tmp}/tandem-scheduler/Chart.yaml"
  archive "${tmp}" "${tmp}/chart.tar" tandem-scheduler
  gzip -n -9 -c "${tmp}/chart.tar" > "${out}/tandem-scheduler-${CHART_VERSION}.tgz"
  rm -rf "${tmp}"
  echo "${out}/tandem-scheduler-${CHART_VERSION}.tgz"
}

if [[ "${1:-}" == chart ]]; then
  mkdir -p "${2:?usage: hack/release.sh chart DIR}"
  package_chart "$(realpath "$2")"
  exit 0
fi

OUT="$(realpath -m "${RELEASE_DIR:-_output/release/${VERSION}}")"
case "${OUT}/" in
  "${ROOT}/_output/"?* | /tmp/?*) ;;
  *)
    echo "hack/release.sh: RELEASE_DIR must be under ${ROOT}/_output or /tmp (it is emptied first), got ${OUT}" >&2
    exit 1
    ;;
esac
rm -rf "${OUT}"
mkdir -p "${OUT}/images" "${OUT}/sbom"
minors=()
for v in "${TANDEM_KUBE_VERSIONS[@]}"; do
  minors+=("$(tandem::version::minor "${v}" | sed 's/^v//')")
done
read -r -a minors <<< "${RELEASE_MINORS:-${minors[*]}}"
IMAGE_PLATFORMS="${RELEASE_IMAGE_PLATFORMS:-linux/amd64 linux/arm64}"
KUBECTL_PLATFORMS="${RELEASE_KUBECTL_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"
echo "release ${VERSION} into ${OUT}: images for Kubernetes ${minors[*]} (${IMAGE_PLATFORMS}), kubectl-tandem for ${KUBECTL_PLATFORMS}"

SBOM="${OUT}/.sbom-tool"
(cd hack/tools && go build -o "${SBOM}" ./cmd/sbom)
sbom() { # sbom BINARY NAME
  "${SBOM}" --name "$2" --version "${VERSION}" --created "${SOURCE_DATE_EPOCH}" --namespace "${RELEASE_URL}/sbom" "$1" > "${OUT}/sbom/$2.spdx.json"
}

# Images, one tag per minor.
work="$(mktemp -d)"
trap 'rm -rf "${work}" "${SBOM}"' EXIT
for minor in "${minors[@]}"; do
  tag="${VERSION}-k8s${minor}"
  IMAGE_DIR="${work}/image" PAUSE_IMAGE_DIR="${work}/image-pause" IMAGE_PLATFORMS="${IMAGE_PLATFORMS}" \
    KUBE_MINOR="${minor}" IMAGE_TAG="${tag}" hack/build-image.sh
  archive "${work}/image" "${OUT}/images/tandem-scheduler_${tag}.oci.tar"
  archive "${work}/image-pause" "${OUT}/images/tandem-pause_${tag}.oci.tar"
  rm -rf "${work}/image" "${work}/image-pause"
  for platform in ${IMAGE_PLATFORMS}; do
    os="${platform%/*}" arch="${platform#*/}"
    for cmd in tandem-scheduler tandem-webhook tandem-pause; do
      sbom "_output/bin/${os}_${arch}/${cmd}" "${cmd}_${tag}_${os}_${arch}"
    done
  done
done

# The chart.
package_chart "${OUT}" > /dev/null

# kubectl-tandem, built in its own module (cmd/kubectl-tandem/go.work adds
# the contract module of this tree).
platforms_yaml=""
for platform in ${KUBECTL_PLATFORMS}; do
  os="${platform%/*}" arch="${platform#*/}"
  name="kubectl-tandem_${os}_${arch}"
  mkdir -p "${work}/${name}"
  (cd cmd/kubectl-tandem && CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" go build -trimpath -ldflags "-s -w -buildid=" \
    -o "${work}/${name}/kubectl-tandem" .)
  cp LICENSE "${work}/${name}/LICENSE"
  archive "${work}/${name}" "${work}/${name}.tar" kubectl-tandem LICENSE
  gzip -n -9 -c "${work}/${name}.tar" > "${OUT}/${name}.tar.gz"
  sbom "${work}/${name}/kubectl-tandem" "${name}"
  platforms_yaml+="
    - selector:
        matchLabels:
          os: ${os}
          arch: ${arch}
      uri: ${RELEASE_URL}/${name}.tar.gz
      sha256: $(sha256sum "${OUT}/${name}.tar.gz" | cut -d' ' -f1)
      bin: kubectl-tandem"
done
cat > "${OUT}/kubectl-tandem.yaml" <<EOF
# krew plugin manifest of kubectl-tandem ${VERSION}: kubectl krew install --manifest=kubectl-tandem.yaml
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: tandem
spec:
  version: ${VERSION}
  homepage: https://github.com/tandem-scheduler/tandem
  shortDescription: Show tandem's workflow-pod reservations for ARC runners
  description: |
    Reads the reservations tandem-scheduler records on ARC runner pods and
    explains why a runner or workflow pod is pending: kubectl tandem
    reservations, nodes and explain. It needs read access to pods, nodes
    and events only.
  platforms:${platforms_yaml}
EOF

printf 'tandem %s\ncommit %s\n%s\n' "${VERSION}" "$(git rev-parse HEAD)" "$(go env GOVERSION)" > "${OUT}/BUILD"
(cd "${OUT}" && find . -type f ! -name SHA256SUMS ! -name '.*' | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum > SHA256SUMS)
echo "release ${VERSION}: $(wc -l < "${OUT}/SHA256SUMS") files in ${OUT} (SHA256SUMS)"
