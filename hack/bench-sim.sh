#!/usr/bin/env bash
# Cluster efficiency at scale (docs/benchmarks.md): the ARC simulator on
# test/scenarios/large.yaml (100 nodes of three sizes, 2,000 jobs of three
# sizes) with the default kube-scheduler, the anti-affinity workaround (one
# runner per node), tandem with LeastAllocated and with MostAllocated, next
# to the ideal packing bound. Prints the simulator's tables (OF IDEAL, VS
# ANTI-AFFINITY) and writes _output/bench/sim/report.{json,svg}.
#
#   hack/bench-sim.sh          # large.yaml at 10x, about 37 min on 2 cores
#   hack/bench-sim.sh short    # large-tiny.yaml (6 nodes, 60 jobs), every scheduler once (make test)
#   SCHEDULERS=tandem/MostAllocated hack/bench-sim.sh
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

MODE="${1:-full}"
SCHEDULERS="${SCHEDULERS:-default/LeastAllocated,anti-affinity/LeastAllocated,tandem/LeastAllocated,tandem/MostAllocated}"
case "${MODE}" in
  full) scenario=test/scenarios/large.yaml out=_output/bench/sim ;;
  short) scenario=test/scenarios/large-tiny.yaml out=_output/bench/sim-short ;;
  *)
    echo "usage: $0 [full|short]" >&2
    exit 2
    ;;
esac
hack/build-control-plane.sh >/dev/null
mkdir -p "${out}"
go build -o _output/bench/tandem-sim ./cmd/tandem-sim
# tandem-sim exits non-zero if a run broke the invariant or left a
# reservation behind; its log (every job's outcome) goes to the out dir.
_output/bench/tandem-sim --scenario "${scenario}" --schedulers "${SCHEDULERS}" --out "${out}" \
  -logtostderr=false -log_file="${out}/tandem-sim.log" -v=2
