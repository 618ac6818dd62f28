#!/usr/bin/env bash
# The plugin's cost per scheduling cycle (BenchmarkCycle,
# pkg/workflowreservation): vanilla kube-scheduler's profile and tandem's
# (shipped, LeastAllocated, reservationMode Pods) on the same snapshot, in
# alternating blocks, at 500 / 5,000 / 15,000 nodes with 0 / 1,000 / 20,000
# reservations held, for a plain pod and a runner. COUNT runs of each case;
# writes _output/bench/cycle.txt (the raw output), cycle-benchstat.txt
# (benchstat's medians with 95% intervals) and cycle.json (per case the
# median tandem/vanilla ratio, its distribution-free interval with at least
# 90% coverage, 5 runs or more, and the verdict against 1.05 for plain pods,
# 1.10 for runners), and prints the verdicts. It fails when a case lacks one
# of its COUNT runs. The benchmark's log goes to cycle.log, so that no log
# line can split a result line.
#
#   hack/bench-cycle.sh                          # everything: about 30 min on 2 cores
#   COUNT=5 ONLY='500Nodes/.*/Runner' hack/bench-cycle.sh
#   COUNT=6 hack/bench-cycle.sh report           # rebuild the summary from cycle.txt (its COUNT)
#   hack/bench-cycle.sh short                    # every benchmark of the package once (make test)
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

MODE="${1:-run}"
COUNT="${COUNT:-10}"
BENCHTIME="${BENCHTIME:-1s}"
ONLY="${ONLY:-.}"
# benchstat, from golang.org/x/perf (built by go run at this version).
BENCHSTAT_VERSION="${BENCHSTAT_VERSION:-v0.0.0-20260908200009-22c9c6c9d4da}"
OUT="${ROOT}/_output/bench"
mkdir -p "${OUT}"

if [[ "${MODE}" != report ]]; then
  go test -c -o "${OUT}/cycle.test" ./pkg/workflowreservation
fi
if [[ "${MODE}" == short ]]; then
  # Each benchmark of the plugin's package once (-benchtime=1x), and the
  # summary made from BenchmarkCycle's output: one run makes no interval.
  if ! (cd pkg/workflowreservation && "${OUT}/cycle.test" -test.run '^$' -test.bench . -test.benchtime 1x \
    2>"${OUT}/cycle-short.log") | tee "${OUT}/cycle-short.txt"; then
    tail -n 40 "${OUT}/cycle-short.log"
    exit 1
  fi
  go run ./test/bench/cmd/bench-cycle -in "${OUT}/cycle-short.txt" -json "${OUT}/cycle-short.json" -runs 1 >/dev/null
  exit 0
fi
if [[ "${MODE}" == run ]]; then
  # The test binary reads the shipped configs relative to its package.
  if ! (cd pkg/workflowreservation && "${OUT}/cycle.test" -test.run '^$' -test.bench "^BenchmarkCycle/${ONLY}" \
    -test.count "${COUNT}" -test.benchtime "${BENCHTIME}" 2>"${OUT}/cycle.log") | tee "${OUT}/cycle.txt"; then
    tail -n 40 "${OUT}/cycle.log"
    exit 1
  fi
fi
go run "golang.org/x/perf/cmd/benchstat@${BENCHSTAT_VERSION}" "${OUT}/cycle.txt" > "${OUT}/cycle-benchstat.txt"
go run ./test/bench/cmd/bench-cycle -in "${OUT}/cycle.txt" -json "${OUT}/cycle.json" -runs "${COUNT}"
echo "benchstat's table: ${OUT}/cycle-benchstat.txt; the summary: ${OUT}/cycle.json"
