#!/usr/bin/env bash
# Fails when kubectl-tandem's copy of pkg/contract is not what
# hack/update-contract-copy.sh writes.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
hack/update-contract-copy.sh "${tmp}"
if ! diff -r "${tmp}" cmd/kubectl-tandem/pkg/contract; then
  echo "cmd/kubectl-tandem/pkg/contract is out of date with pkg/contract: run hack/update-contract-copy.sh" >&2
  exit 1
fi
