#!/usr/bin/env bash
# Runs every Go fuzz target of the module (func FuzzXxx in a _test.go file)
# for FUZZTIME each (default 60s), one after the other. Their seed corpora
# (f.Add and testdata/fuzz/) run in `make test` like any test. A failing
# input is written to the package's testdata/fuzz/ and the run stops:
# commit it with the fix, so that `make test` keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-60s}
mapfile -t targets < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Z]' . | grep -v '^./vendor/' | sort |
	while read -r file; do
		for name in $(sed -nE 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/p' "$file"); do
			echo "./$(dirname "${file#./}") $name"
		done
	done)
echo "fuzz: ${#targets[@]} targets, ${fuzztime} each"
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz: $name in $pkg"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | grep -v '^fuzz: elapsed' || { echo "fuzz: $name failed" >&2; exit 1; }
done
