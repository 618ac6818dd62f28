#!/usr/bin/env bash
# Scheduling throughput of tandem against vanilla kube-scheduler, measured
# side by side with scheduler_perf (test/bench). Prints, per workload, the
# SchedulingThroughput average of each and their ratio (tandem / vanilla),
# median over COUNT runs.
#
# Only the Runners and PodsAmongReservations workloads at 500 nodes (BENCH);
# hack/bench-scheduler.sh runs every workload with latencies and spread.
#
#   hack/bench.sh                   # 500 nodes, 2000 pods per workload, COUNT=3
#   FILTER=performance,short hack/bench.sh   # small workloads, quick
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
COUNT="${COUNT:-3}"
FILTER="${FILTER:-performance,-short}"
BENCH="${BENCH:-BenchmarkPerfScheduling/^(Runners|PodsAmongReservations)(Vanilla|Tandem)\$/^(500|10)Nodes_}"
OUT="${ROOT}/_output/bench"
mkdir -p "${OUT}"
hack/build-control-plane.sh >/dev/null # scheduler_perf starts etcd from PATH

echo "running scheduler_perf (filter ${FILTER}, count ${COUNT}); raw output in ${OUT}/bench.txt"
PATH="${ROOT}/bin:${PATH}" ARTIFACTS="${OUT}" go test ./test/bench/ -run '^$' \
  -bench "${BENCH}" -benchtime=1x -count="${COUNT}" -timeout 80m \
  -perf-scheduling-label-filter="${FILTER}" -data-items-dir="${OUT}" > "${OUT}/bench.txt" 2>&1 || {
  tail -50 "${OUT}/bench.txt"; exit 1; }

# Lines look like: BenchmarkPerfScheduling/RunnersTandem/500Nodes_2000Runners-2 1 ... 312.5 SchedulingThroughput/Average ...
awk '
  /^BenchmarkPerfScheduling\// {
    split($1, p, "/"); tc = p[2]; wl = p[3]; sub(/-[0-9]+$/, "", wl)
    for (i = 3; i < NF; i++) if ($(i+1) == "SchedulingThroughput/Average") {
      kind = (tc ~ /Tandem$/) ? "tandem" : "vanilla"; base = tc; sub(/(Tandem|Vanilla)$/, "", base)
      key = base "/" wl; n[key, kind]++; v[key, kind, n[key, kind]] = $i; keys[key] = 1
    }
  }
  function median(key, kind,    m, i, j, t, a) {
    m = n[key, kind]; for (i = 1; i <= m; i++) a[i] = v[key, kind, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  END {
    printf "%-45s %12s %12s %8s\n", "workload (median of runs)", "vanilla p/s", "tandem p/s", "ratio"
    for (k in keys) {
      if (!n[k, "vanilla"] || !n[k, "tandem"]) { printf "%-45s missing a side\n", k; continue }
      va = median(k, "vanilla"); ta = median(k, "tandem")
      printf "%-45s %12.1f %12.1f %8.3f\n", k, va, ta, ta / va
    }
  }' "${OUT}/bench.txt"
