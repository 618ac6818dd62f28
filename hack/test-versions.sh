#!/usr/bin/env bash
# Tests tandem once per supported Kubernetes minor, each against itself: the
# tests of every package and binary (make test-unit's set) compiled against
# that minor's Kubernetes modules, and the integration tests with that
# minor's tandem-scheduler binary and kube-apiserver (bin/vX.Y, built by
# hack/build-versions.sh); then a short
# chaos run (SIGKILLs, leader kills, an apiserver restart) with the newest.
# One summary line per minor, with its time; fails if any minor fails.
#
#   hack/test-versions.sh [VERSION...]    default: hack/build-versions.sh's
#
# Logs: _output/versions/vX.Y/{unit,integration}.log, _output/versions/chaos/.
# Env: TEST_TIMEOUT (default 30m), CHAOS_JOBS (default 100; 0 skips the run).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
source hack/lib/version.sh

versions=("$@")
if [[ ${#versions[@]} -eq 0 ]]; then
  versions=("${TANDEM_KUBE_VERSIONS[@]}")
fi
module=github.com/tandem-scheduler/tandem
# Every package's tests and the binaries' (what make test-unit runs; a
# package that starts a control plane, harness/controlplane, gets the minor's
# binaries), then the integration tests.
unit=("${module}/pkg/..." "${module}/harness/..." "${module}/cmd/tandem-scheduler/..." "${module}/cmd/tandem-webhook/...")
integration=("${module}/test/integration/...")

summary=()
failed=0
for version in "${versions[@]}"; do
  minor="$(tandem::version::minor "${version}")"
  bin="${ROOT}/bin/${minor}"
  for name in etcd kube-apiserver tandem-scheduler tandem-webhook; do
    if [[ ! -x "${bin}/${name}" ]]; then
      echo "hack/test-versions.sh: bin/${minor}/${name} missing (run hack/build-versions.sh ${version})" >&2
      exit 1
    fi
  done
  dir="$(tandem::version::module_dir "${version}")"
  tags="$(tandem::version::tags "${version}")"
  logs="${ROOT}/_output/versions/${minor}"
  mkdir -p "${logs}"

  echo "=== ${version}: unit tests (log _output/versions/${minor}/unit.log)"
  start=${SECONDS}
  result=PASS
  (cd "${dir}" && GOWORK=off TANDEM_BIN_DIR="${bin}" TANDEM_APISERVER_VERSION="${version}" TANDEM_KUBE_VERSION="${version}" \
    go test -tags "${tags}" -count=1 "${unit[@]}") >"${logs}/unit.log" 2>&1 || result=FAIL
  unit_time=$((SECONDS - start))
  grep -Ev '^(ok|\?) ' "${logs}/unit.log" | tail -n 20 || true

  echo "=== ${version}: integration tests, TANDEM_BIN_DIR=bin/${minor} (log _output/versions/${minor}/integration.log)"
  start=${SECONDS}
  (cd "${dir}" && GOWORK=off TANDEM_BIN_DIR="${bin}" TANDEM_APISERVER_VERSION="${version}" TANDEM_KUBE_VERSION="${version}" \
    go test -tags "${tags}" -count=1 -timeout "${TEST_TIMEOUT:-30m}" "${integration[@]}") >"${logs}/integration.log" 2>&1 || result=FAIL
  integration_time=$((SECONDS - start))
  tail -n 5 "${logs}/integration.log"

  if [[ "${result}" == FAIL ]]; then
    failed=1
  fi
  summary+=("$(printf 'test-versions: %-8s %s  unit %dm%02ds  integration %dm%02ds' "${version}" "${result}" \
    $((unit_time / 60)) $((unit_time % 60)) $((integration_time / 60)) $((integration_time % 60)))")
  if [[ "${result}" == FAIL ]]; then
    summary+=("$(cat "${logs}"/unit.log "${logs}"/integration.log | grep -E '^(--- FAIL|FAIL|ok )' | grep -v '^ok ' | sed 's/^/    /' || true)")
  fi
done
newest="$(printf '%s\n' "${versions[@]}" | sort -V | tail -n 1)"
newest="$(tandem::version::minor "${newest}")"

jobs="${CHAOS_JOBS:-100}"
if [[ "${jobs}" != 0 && -n "${newest}" ]]; then
  echo "=== chaos, ${jobs} jobs, with bin/${newest} (report _output/versions/chaos/report.json)"
  start=${SECONDS}
  result=PASS
  TANDEM_BIN_DIR="${ROOT}/bin/${newest}" go run ./cmd/tandem-chaos --jobs "${jobs}" --seed 1 \
    --scheduler "bin/${newest}/tandem-scheduler" --out _output/versions/chaos || result=FAIL
  elapsed=$((SECONDS - start))
  if [[ "${result}" == FAIL ]]; then
    failed=1
  fi
  summary+=("$(printf 'test-versions: chaos with %s, %d jobs: %s in %dm%02ds' "${newest}" "${jobs}" "${result}" $((elapsed / 60)) $((elapsed % 60)))")
fi

echo
printf '%s\n' "${summary[@]}"
exit "${failed}"
