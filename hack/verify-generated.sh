#!/usr/bin/env bash
# Regenerates everything generated and fails when the tree changes: committed
# generated code and manifests must match their sources.
set -euo pipefail
cd "$(dirname "$0")/.."

make --no-print-directory generate manifests >/dev/null
go mod tidy
if ! git diff --exit-code --stat -- . || [ -n "$(git status --porcelain --untracked-files=all -- api config charts osd-image go.mod go.sum)" ]; then
  git status --porcelain --untracked-files=all -- api config charts osd-image go.mod go.sum
  echo "verify: generated files or go.mod are stale; run 'make generate manifests' and 'go mod tidy' and commit the result" >&2
  exit 1
fi
echo "verify: generated code, manifests and go.mod are up to date"
