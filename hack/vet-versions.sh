#!/usr/bin/env bash
# Vets what make test-versions tests (the packages and their tests, the
# binaries, the integration tests) against every supported Kubernetes
# minor other than go.mod's (each from its hack/compat module, with its build
# tags): a build-tagged file that one minor needs and another lacks fails
# here, in make verify, instead of only in make test-versions.
#
#   hack/vet-versions.sh [VERSION...]    default: every supported but go.mod's
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
source hack/lib/version.sh

module=github.com/tandem-scheduler/tandem
if [[ $# -eq 0 ]]; then
  for v in "${TANDEM_KUBE_VERSIONS[@]}"; do
    [[ "${v}" == "${TANDEM_GOMOD_KUBE_VERSION}" ]] || set -- "$@" "${v}"
  done
fi
for version in "$@"; do
  dir="$(tandem::version::checked_module_dir "${version}")"
  start=${SECONDS}
  (cd "${dir}" && GOWORK=off go vet -tags "$(tandem::version::tags "${version}")" \
    "${module}/pkg/..." "${module}/harness/..." "${module}/cmd/tandem-scheduler/..." "${module}/cmd/tandem-webhook/..." \
    "${module}/test/integration/...")
  echo "vet-versions: ${version} ok ($((SECONDS - start))s)"
done
