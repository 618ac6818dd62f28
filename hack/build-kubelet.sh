#!/usr/bin/env bash
# Everything a real node on this machine needs (harness/realnode):
#   containerd, runc, ctr, the CNI plugins,     Debian's packages, installed
#   iptables (the kubelet's canary chains), ip  with apt-get when missing (root)
#   bin/kubelet                                 k8s.io/kubernetes/cmd/kubelet at
#                                               go.mod's version, built from the
#                                               module hack/kubelet (its own, so
#                                               that the kubelet's dependencies
#                                               stay out of tandem's)
#   bin/tandem-pause-image.tar                  tandem-pause (cmd/tandem-pause) as
#                                               an OCI archive for this machine's
#                                               platform: the one image every
#                                               container of a real node runs
# go build is always called: its cache makes an unchanged rebuild take seconds;
# a cold kubelet build takes about a minute on 2 cores.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
source hack/lib/version.sh
mkdir -p bin

# runc, iptables and ip live in /usr/sbin, which a user's PATH may lack.
export PATH="${PATH}:/usr/sbin:/sbin"
missing=()
for cmd in containerd runc ctr iptables ip; do
  command -v "${cmd}" >/dev/null || missing+=("${cmd}")
done
if [[ ! -x /usr/lib/cni/bridge && ! -x /opt/cni/bin/bridge ]]; then
  missing+=(cni-plugins)
fi
if (( ${#missing[@]} > 0 )); then
  echo "installing containerd, runc and the CNI plugins (missing: ${missing[*]})"
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
    echo "hack/build-kubelet.sh: ${missing[*]} missing and no apt-get as root to install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  packages=(containerd runc containernetworking-plugins iptables iproute2)
  apt=(apt-get -o DPkg::Lock::Timeout=300)
  "${apt[@]}" install -y --no-install-recommends "${packages[@]}" ||
    { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends "${packages[@]}"; }
fi

version="$(cd hack/kubelet && GOWORK=off go list -m -f '{{.Version}}' k8s.io/kubernetes)"
if [[ "${version}" != "${TANDEM_GOMOD_KUBE_VERSION}" ]]; then
  echo "hack/build-kubelet.sh: hack/kubelet/go.mod has k8s.io/kubernetes ${version}, go.mod ${TANDEM_GOMOD_KUBE_VERSION}: update hack/kubelet/go.mod" >&2
  exit 1
fi
start=${SECONDS}
echo "building bin/kubelet from k8s.io/kubernetes/cmd/kubelet ${version}"
(cd hack/kubelet && GOWORK=off go build -o ../../bin/kubelet -ldflags "$(tandem::version::ldflags "${version}")" k8s.io/kubernetes/cmd/kubelet)
echo "built bin/kubelet in $((SECONDS - start))s"

scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
platform="$(go env GOOS)/$(go env GOARCH)"
CGO_ENABLED=0 go build -trimpath -o "${scratch}/tandem-pause" ./cmd/tandem-pause
(cd hack/tools && go run ./cmd/build-image --out "${scratch}/layout" --rootfs ../image/rootfs \
  --title tandem-pause --binary-path /usr/local/bin/tandem-pause --ref local --version local \
  --binary "${platform}=${scratch}/tandem-pause" >/dev/null)
tar -C "${scratch}/layout" -cf bin/tandem-pause-image.tar .
echo "built bin/tandem-pause-image.tar (${platform})"
