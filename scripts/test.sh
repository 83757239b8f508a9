#!/usr/bin/env bash
# test.sh: the project's test command (README, CI). Installs what the tests need, checks
# formatting, vet, the package rules and the consensus arithmetic (no fused multiply-add), then
# runs every test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
  echo "test: not gofmt-formatted:" >&2; echo "$unformatted" >&2; exit 1
fi
go vet ./...
scripts/checkdeps.sh
scripts/checkfma.sh
go test -race -timeout 9m "$@" ./...
