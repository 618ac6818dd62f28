#!/usr/bin/env bash
# kube-scheduler's own integration tests, vanilla and with tandem's plugin as
# shipped in every profile they build (test/upstream), COUNT times each in
# alternating rounds; prints each side's runs and failures per test.
#
#   hack/upstream-tests.sh                    # TestAsyncPreemption, 20 runs a side (~35 min)
#   hack/upstream-tests.sh short              # one subtest once a side: the injection still works (make test)
#   hack/upstream-tests.sh report             # the table again from the last run's logs
#   COUNT=5 RUN='^Test' hack/upstream-tests.sh   # the whole preemption suite, 5 runs a side
#   PKG=k8s.io/kubernetes/test/integration/scheduler/filters RUN='^Test' hack/upstream-tests.sh
#   (TIMEOUT: each run's -test.timeout, default 20m)
#
# What the tandem side exercises: the tests create no ARC runners, so every
# pod takes WorkflowReservation's path for ordinary pods (its filter and
# score in NodeResourcesFit's place, its bind skipping), with no room held.
# test/upstream says which profiles it leaves alone and what it cannot carry
# over from a profile; a failure on the tandem side alone is a lead, not yet
# a verdict.
#
# The tests are the ones of go.mod's k8s.io/kubernetes, compiled from the
# module cache. The tandem side is built against a tree of hard links to
# that module (a copy where links cannot be made) in which test/integration/util/util.go's scheduler constructor wraps
# the test's options in WithTransformedProfiles, a function this script adds
# to package scheduler. The tree lives under _output; nothing of upstream is
# copied into the repository. Each side's output stays in _output/upstream/
# (_output/upstream-short/ in short mode).
set -o errexit -o nounset -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

PKG="${PKG:-k8s.io/kubernetes/test/integration/scheduler/preemption}"
RUN="${RUN:-^TestAsyncPreemption\$}"
COUNT="${COUNT:-20}"
OUT="${ROOT}/_output/upstream"
TIMEOUT="${TIMEOUT:-20m}"
MODE="${1:-full}"
if [[ "${MODE}" == short ]]; then
  PKG=k8s.io/kubernetes/test/integration/scheduler/preemption
  RUN='^TestAsyncPreemption$/^basic:_async_preemption_happens_expectedly'
  TIMEOUT=5m
  COUNT=1
  OUT="${ROOT}/_output/upstream-short"
fi
name="$(basename "${PKG}")"

# report prints each side's runs and failures from its log; it fails when a
# side's schedulers were not what the side is, when nothing ran, and in
# short mode when the test failed.
report() {
  local status=0 side log injected skipped runs runs_ok sub_pass sub_fail
  for side in vanilla tandem; do
    log="${OUT}/${name}-${side}.log"
    injected="$(grep -c '^tandem-upstream: ' "${log}" || true)"
    skipped="$(grep -c '^tandem-upstream-skipped: ' "${log}" || true)"
    runs="$(grep -c '^upstream-tests: exit ' "${log}" || true)"
    runs_ok="$(grep -c '^upstream-tests: exit 0$' "${log}" || true)"
    sub_pass="$(grep -cE '^ +--- PASS: ' "${log}" || true)"
    sub_fail="$(grep -cE '^ +--- FAIL: ' "${log}" || true)"
    echo "${side}: ${runs_ok} of ${runs} runs passed (subtests: ${sub_pass} of $((sub_pass + sub_fail))); ${injected} test schedulers' profiles ran WorkflowReservation, ${skipped} were left alone (test/upstream)"
    grep -E -- '--- FAIL: ' "${log}" | sed -E 's/^ *--- FAIL: ([^ ]+).*/\1/' | sort | uniq -c | sed 's/^/  failed: /' || true
    if [[ "${side}" == tandem && "${injected}" == 0 ]] || [[ "${side}" == vanilla && "${injected}${skipped}" != 00 ]]; then
      echo "upstream-tests: the ${side} build's schedulers are not what this side is (${injected} ran WorkflowReservation)" >&2
      status=1
    fi
    if [[ "${MODE}" == short ]] && (( runs_ok != runs )); then
      echo "upstream-tests: ${RUN} failed on the ${side} side" >&2
      status=1
    fi
    if (( runs == 0 )) || { [[ "${MODE}" != report ]] && (( runs != COUNT )); } || ! grep -qE '^--- (PASS|FAIL): ' "${log}"; then
      echo "upstream-tests: ${runs} runs on the ${side} side (${COUNT} wanted), or no test of ${PKG} matched '${RUN}'" >&2
      status=1
    fi
  done
  return "${status}"
}

if [[ "${MODE}" == report ]]; then
  report
  exit
fi
mkdir -p "${OUT}"

hack/build-control-plane.sh >/dev/null
export PATH="${ROOT}/bin:${PATH}"

mod="$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)"
# InitTestSchedulerWithOptions's constructor, which the preemption suite and
# most others use. StartScheduler's is not wrapped: a package that builds its
# schedulers there shows none that ran WorkflowReservation, and fails below.
marker='testCtx.Scheduler, err = scheduler.New('
if [[ "$(grep -c -F "${marker}" "${mod}/test/integration/util/util.go")" != 1 ]]; then
  echo "upstream-tests: test/integration/util/util.go no longer has one '${marker}'; update this script" >&2
  exit 1
fi
# The module cache is read-only and go's -overlay may not touch it: the
# tandem side builds against a tree of hard links to it, with go.mod's
# k8s.io/kubernetes replaced by that tree, and two files changed.
# One path for every mode: the build cache keys a package on its directory,
# so a second build from the same path compiles nothing again.
k8s="${ROOT}/_output/upstream-kubernetes"
rm -rf "${k8s}"
if ! cp -al "${mod}" "${k8s}" 2>/dev/null; then
  rm -rf "${k8s}"
  cp -r "${mod}" "${k8s}"
fi
find "${k8s}" -type d -exec chmod u+w {} +
rm "${k8s}/test/integration/util/util.go"
sed -e "s|^import (|import (\n\ttandemupstream \"github.com/tandem-scheduler/tandem/test/upstream\"|" \
  -e "s|^\(\t*\)${marker}|\1opts = []scheduler.Option{scheduler.WithTransformedProfiles(tandemupstream.Transform(t), tandemupstream.Registry(), opts...)}\n\1${marker}|" \
  "${mod}/test/integration/util/util.go" > "${k8s}/test/integration/util/util.go"

cat > "${k8s}/pkg/scheduler/zz_tandem_profiles.go" <<'EOF'
package scheduler

import (
	"fmt"

	configv1 "k8s.io/kube-scheduler/config/v1"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// WithTransformedProfiles applies opts, then hands the profiles they chose
// (kube-scheduler's default one if none) to transform and adds registry to
// the out-of-tree plugins. Added by tandem's hack/upstream-tests.sh for one
// test build only.
func WithTransformedProfiles(transform func([]schedulerapi.KubeSchedulerProfile) []schedulerapi.KubeSchedulerProfile, registry frameworkruntime.Registry, opts ...Option) Option {
	return func(o *schedulerOptions) {
		for _, opt := range opts {
			opt(o)
		}
		if o.applyDefaultProfile {
			var versioned configv1.KubeSchedulerConfiguration
			scheme.Scheme.Default(&versioned)
			cfg := schedulerapi.KubeSchedulerConfiguration{}
			if err := scheme.Scheme.Convert(&versioned, &cfg, nil); err != nil {
				panic(fmt.Sprintf("the default profile: %v", err))
			}
			o.profiles = cfg.Profiles
			o.applyDefaultProfile = false
		}
		o.profiles = transform(o.profiles)
		merged := frameworkruntime.Registry{}
		for name, factory := range o.frameworkOutOfTreeRegistry {
			merged[name] = factory
		}
		for name, factory := range registry {
			merged[name] = factory
		}
		o.frameworkOutOfTreeRegistry = merged
	}
}
EOF
cp go.mod "${OUT}/go.mod"
cp go.sum "${OUT}/go.sum"
GOWORK=off go mod edit -modfile="${OUT}/go.mod" -replace "k8s.io/kubernetes=${k8s}"

go test -c -o "${OUT}/${name}-vanilla.test" "${PKG}"
GOWORK=off go test -c -modfile="${OUT}/go.mod" -o "${OUT}/${name}-tandem.test" "${PKG}"

export TANDEM_SCHEDULER_CONFIG="${ROOT}/manifests/scheduler-config.yaml"
for side in vanilla tandem; do : > "${OUT}/${name}-${side}.log"; done
echo "upstream-tests: ${PKG} -run '${RUN}', ${COUNT} rounds, the two sides alternating; logs in ${OUT}"
for ((i = 1; i <= COUNT; i++)); do
  order=(vanilla tandem)
  (( i % 2 == 0 )) && order=(tandem vanilla)
  for side in "${order[@]}"; do
    # A failing run (a test that fails, panics or times out) is what this
    # script counts, not a reason to stop.
    rc=0
    (cd "${mod}/${PKG#k8s.io/kubernetes/}" && "${OUT}/${name}-${side}.test" -test.run "${RUN}" -test.timeout "${TIMEOUT}" -test.v) \
      >> "${OUT}/${name}-${side}.log" 2>&1 || rc=$?
    echo "upstream-tests: exit ${rc}" >> "${OUT}/${name}-${side}.log"
  done
done

report
