#!/usr/bin/env bash
# tandem against vanilla kube-scheduler with scheduler_perf, side by side
# (test/bench, docs/benchmarks.md). Every workload of
# test/bench/performance-config.yaml runs under both scheduler configs, one
# process per run, the two sides back to back in alternating order, REPS
# times (REPS_LARGE for 5,000-node workloads and larger). Writes
# _output/bench/scheduler.json and prints the table; each run's data items
# and output stay in _output/bench/scheduler/.
#
#   hack/bench-scheduler.sh                 # everything: about 70 min on 2 shared cores
#   REPS=5 hack/bench-scheduler.sh         # the fewest repetitions that make an interval (>= 90% coverage)
#   ONLY='^Runners/' hack/bench-scheduler.sh # some workloads (regexp on Base/Workload)
#   hack/bench-scheduler.sh short           # the tiny `short` variant of each once (make test, ~2 min)
#   hack/bench-scheduler.sh report          # rebuild the report from the latest invocation's runs in _output/bench/scheduler
#   RUN_ID=20261205T101500 hack/bench-scheduler.sh report   # ... or from an earlier invocation's
#   hack/bench-scheduler.sh profile Runners/500Nodes_2000Runners   # tandem side once, CPU profile
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

MODE="${1:-full}"
REPS="${REPS:-7}"
# A median's interval needs 5 repetitions at least (test/bench/compare).
REPS_LARGE="${REPS_LARGE:-5}"
ONLY="${ONLY:-}"
OUT="${ROOT}/_output/bench"
BINARY="${OUT}/bench.test"
DRIVER="${OUT}/bench-scheduler"

build() {
  # scheduler_perf starts etcd from PATH and its apiserver in-process.
  hack/build-control-plane.sh >/dev/null
  mkdir -p "${OUT}"
  go test -c -o "${BINARY}" ./test/bench
  go build -o "${DRIVER}" ./test/bench/cmd/bench-scheduler
}

export PATH="${ROOT}/bin:${PATH}"
case "${MODE}" in
  full)
    build
    "${DRIVER}" -binary "${BINARY}" -out "${OUT}/scheduler" -json "${OUT}/scheduler.json" \
      -reps "${REPS}" -reps-large "${REPS_LARGE}" -only "${ONLY}" -commit "$(git describe --always --dirty 2>/dev/null || echo unknown)"
    ;;
  short)
    build
    "${DRIVER}" -binary "${BINARY}" -out "${OUT}/scheduler-short" -json "${OUT}/scheduler-short.json" -short
    ;;
  report)
    go build -o "${DRIVER}" ./test/bench/cmd/bench-scheduler
    "${DRIVER}" -report-only -out "${OUT}/scheduler" -json "${OUT}/scheduler.json" -only "${ONLY}" -run-id "${RUN_ID:-}"
    ;;
  profile)
    workload="${2:?usage: hack/bench-scheduler.sh profile Base/Workload}"
    build
    "${DRIVER}" -binary "${BINARY}" -out "${OUT}/profile" -profile "${workload}"
    profile="$(ls -t "${OUT}"/profile/*/cpu.pprof | head -1)"
    echo "top functions of the plugin (cumulative), then of the whole process:"
    go tool pprof -top -cum -focus='workflowreservation' "${BINARY}" "${profile}" 2>/dev/null | head -40
    go tool pprof -top -cum "${BINARY}" "${profile}" 2>/dev/null | head -30
    ;;
  *)
    echo "usage: $0 [full|short|report|profile Base/Workload]" >&2
    exit 2
    ;;
esac
