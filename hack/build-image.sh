#!/usr/bin/env bash
# Builds tandem-scheduler's multi-platform OCI image without a container
# runtime: static binaries (CGO_ENABLED=0) of tandem-scheduler and
# tandem-webhook per platform into _output/bin/<os>_<arch>/, then
# hack/tools/cmd/build-image puts them into a one-layer image FROM scratch
# (the binaries, passwd and group from hack/image/rootfs, user 65532, no
# shell; the entrypoint is tandem-scheduler, the chart runs
# /usr/local/bin/tandem-webhook as the webhook's command), writes an OCI
# layout and checks it. Then the same for tandem-pause, the placeholders'
# image (the chart's default placeholderImage is it, next to
# tandem-scheduler's in the installer's registry).
#
#   IMAGE_DIR        OCI layout to write (default _output/image)
#   PAUSE_IMAGE_DIR  tandem-pause's OCI layout (default _output/image-pause)
#   IMAGE_PLATFORMS  default "linux/amd64 linux/arm64"
#   KUBE_MINOR       the Kubernetes minor to build for (1.34, 1.35, 1.36, 1.37; default the newest):
#                    tandem built against that minor's kube-scheduler (hack/lib/version.sh)
#   IMAGE_TAG        default <tandem version>-k8s<minor>, e.g. v0.40.0-k8s1.37 (both images)
#
# Push it with any OCI tool, e.g. `crane push _output/image REGISTRY/tandem-scheduler:TAG`.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source hack/lib/version.sh

IMAGE_DIR="$(realpath -m "${IMAGE_DIR:-_output/image}")"
PAUSE_IMAGE_DIR="$(realpath -m "${PAUSE_IMAGE_DIR:-_output/image-pause}")"
IMAGE_PLATFORMS="${IMAGE_PLATFORMS:-linux/amd64 linux/arm64}"
KUBE_MINOR="${KUBE_MINOR:-${TANDEM_KUBE_VERSIONS[-1]}}"
kube_version="$(tandem::version::of_minor "$(echo "${KUBE_MINOR}" | cut -d. -f1,2)")"
module_dir="$(tandem::version::checked_module_dir "${kube_version}")"
tags="$(tandem::version::tags "${kube_version}")"
# Stripped (-s -w: no symbol table, no DWARF), as Kubernetes' own release
# binaries are; stack traces keep their function names and lines.
ldflags="$(tandem::version::ldflags "${kube_version}") -s -w"
IMAGE_TAG="${IMAGE_TAG:-$(tandem::version::image_tag "${kube_version}")}"
echo "building images ${IMAGE_TAG}: tandem ${TANDEM_VERSION} with kube-scheduler ${kube_version} (${module_dir#"$(pwd)/"})"

args=() pause_args=()
for platform in ${IMAGE_PLATFORMS}; do
  os="${platform%/*}" arch="${platform#*/}"
  for cmd in tandem-scheduler tandem-webhook tandem-pause; do
    out="$(pwd)/_output/bin/${os}_${arch}/${cmd}"
    echo "building ${out}"
    (cd "${module_dir}" && CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" GOWORK=off go build -trimpath -tags "${tags}" -ldflags "${ldflags}" \
      -o "${out}" "github.com/tandem-scheduler/tandem/cmd/${cmd}")
  done
  args+=(--binary "${platform}=$(pwd)/_output/bin/${os}_${arch}/tandem-scheduler"
    --extra "${platform}=/usr/local/bin/tandem-webhook=$(pwd)/_output/bin/${os}_${arch}/tandem-webhook")
  pause_args+=(--binary "${platform}=$(pwd)/_output/bin/${os}_${arch}/tandem-pause")
done
cd hack/tools
go run ./cmd/build-image --out "${IMAGE_DIR}" --rootfs ../image/rootfs \
  --ref "${IMAGE_TAG}" --version "${IMAGE_TAG}" "${args[@]}"
go run ./cmd/build-image --out "${PAUSE_IMAGE_DIR}" --rootfs ../image/rootfs \
  --title tandem-pause --binary-path /usr/local/bin/tandem-pause \
  --ref "${IMAGE_TAG}" --version "${IMAGE_TAG}" "${pause_args[@]}"
