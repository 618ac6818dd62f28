#!/usr/bin/env bash
# Runs the integration tests (test/integration, harness/controlplane) once per
# kube-apiserver version, with TANDEM_BIN_DIR at bin/compat/VERSION (built by
# hack/build-compat.sh), and prints one summary line per version. Fails if
# any version fails.
#
#   hack/test-compat.sh [VERSION...]     default: v1.36.3 v1.37.2
#
# The Kubernetes version of go.mod (v1.35.4) means bin/ itself, as a baseline.
# Logs: _output/compat/VERSION/go-test.log. Env: TEST_TIMEOUT (default 30m).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
source hack/lib/version.sh

versions=("$@")
if [[ ${#versions[@]} -eq 0 ]]; then
  versions=(v1.36.3 v1.37.2)
fi
packages=(./test/integration/... ./harness/controlplane/...)

summary=()
failed=0
for version in "${versions[@]}"; do
  bin="${ROOT}/bin/compat/${version}"
  if [[ "${version}" == "${TANDEM_KUBE_VERSION}" ]]; then
    bin="${ROOT}/bin"
  fi
  for name in etcd kube-apiserver tandem-scheduler; do
    if [[ ! -x "${bin}/${name}" ]]; then
      echo "hack/test-compat.sh: ${bin}/${name} missing (run hack/build-compat.sh ${version}, make control-plane build)" >&2
      exit 1
    fi
  done
  got="$("${bin}/kube-apiserver" --version)"
  if [[ "${got}" != "Kubernetes ${version}" ]]; then
    echo "hack/test-compat.sh: ${bin}/kube-apiserver reports '${got}', want Kubernetes ${version}" >&2
    exit 1
  fi

  logdir="_output/compat/${version}"
  mkdir -p "${logdir}"
  echo "=== kube-apiserver ${version} (TANDEM_BIN_DIR=${bin})"
  start=${SECONDS}
  result=PASS
  TANDEM_BIN_DIR="${bin}" TANDEM_APISERVER_VERSION="${version}" \
    go test -count=1 -timeout "${TEST_TIMEOUT:-30m}" "${packages[@]}" 2>&1 | tee "${logdir}/go-test.log" ||
    result=FAIL
  elapsed=$((SECONDS - start))
  if [[ "${result}" == FAIL ]]; then
    failed=1
  fi
  summary+=("$(printf 'test-compat: kube-apiserver %-8s %s in %dm%02ds (log %s/go-test.log)' \
    "${version}" "${result}" $((elapsed / 60)) $((elapsed % 60)) "${logdir}")")
  if [[ "${result}" == FAIL ]]; then
    summary+=("$(grep -E '^(--- FAIL|FAIL)' "${logdir}/go-test.log" | sed 's/^/    /' || true)")
  fi
done

echo
printf '%s\n' "${summary[@]}"
exit "${failed}"
