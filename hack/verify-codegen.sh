#!/usr/bin/env bash
# Fails when the zz_generated.*.go files are not what hack/update-codegen.sh
# produces, or are not in git. Regenerates into the tree, so after a failure
# the tree holds the up-to-date files.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

generated=('*zz_generated.deepcopy.go' '*zz_generated.conversion.go' '*zz_generated.defaults.go')
list_generated() {
  find pkg \( -name zz_generated.deepcopy.go -o -name zz_generated.conversion.go -o -name zz_generated.defaults.go \)
}

# The generated files as they are now: a hand edit that is not committed
# shows as a change made by regenerating.
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
mkdir "${tmp}/before" "${tmp}/after"
list_generated | xargs -r cp --parents -t "${tmp}/before"

hack/update-codegen.sh >/dev/null

list_generated | xargs -r cp --parents -t "${tmp}/after"
if ! (cd "${tmp}" && diff -ruN before after >diff); then
  echo "generated code is out of date; hack/update-codegen.sh (make generate) changed:" >&2
  sed -n 's|^diff -ruN before/\([^ ]*\) .*|\1|p' "${tmp}/diff" >&2
  cat "${tmp}/diff" >&2
  exit 1
fi

changed="$(git diff --name-only -- "${generated[@]}")"
untracked="$(git ls-files --others --exclude-standard -- "${generated[@]}")"
if [[ -n "${changed}" || -n "${untracked}" ]]; then
  echo "generated code is up to date but not in git; git add and commit:" >&2
  [[ -z "${changed}" ]] || echo "${changed}" >&2
  [[ -z "${untracked}" ]] || sed 's/$/ (untracked)/' <<<"${untracked}" >&2
  exit 1
fi
