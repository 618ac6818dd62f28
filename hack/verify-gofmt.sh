#!/usr/bin/env bash
# Fails when a Go file is not gofmt-formatted.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bad="$(git ls-files -co --exclude-standard '*.go' | xargs gofmt -l)"
if [[ -n "${bad}" ]]; then
  echo "gofmt needed for:" >&2
  echo "${bad}" >&2
  exit 1
fi
