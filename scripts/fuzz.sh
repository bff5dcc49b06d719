#!/usr/bin/env bash
# Runs every go test -fuzz target of the repository for FUZZTIME each (one at
# a time: Go fuzzes one target per process; a target in a module of its own,
# such as bench/peers, runs from that module's directory), then prints one
# line per target and exits non-zero when any failed. A failure leaves its input in the
# package's testdata/fuzz/<Target>/ directory, where `go test` replays it from
# then on: fix the code, and commit the input as the regression test.
#
# Go 1.26's fuzz coordinator can end a duration-bounded run with "context
# deadline exceeded" and no failing input (golang/go#75804, fixed in Go 1.27):
# a target that fails that way without writing an input is reported as
# "race", not as a failure. Any failure that writes an input is one.
# Usage: scripts/fuzz.sh [FUZZTIME] [REGEXP]   (defaults 30s and every target;
# REGEXP selects targets by "package-dir/FuzzName", e.g. 'agentos/|FuzzParse$')
# FUZZMINIMIZETIME (default 5s) bounds the minimization of each new input: at
# Go's default (60s) a target with large inputs spends most of its time
# minimizing inputs that only added coverage.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-30s}
pattern=${2:-.}
minimize=${FUZZMINIMIZETIME:-5s}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# "dir name" for each fuzz target of a _test.go file in git.
targets=$(git grep -l '^func Fuzz[A-Za-z0-9_]*(' -- '*_test.go' | while read -r f; do
	sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f" | sed "s|^|$(dirname "$f") |"
done | sort -u)

# module DIR: the directory of the nearest go.mod at or above DIR.
module() {
	local d=$1
	while [ "$d" != . ] && [ ! -f "$d/go.mod" ]; do d=$(dirname "$d"); done
	echo "$d"
}

# inputs DIR: how many inputs a target's testdata/fuzz directory holds.
inputs() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

failed=0
races=0
ran=0
while read -r dir name; do
	[ -n "$name" ] || continue
	if ! printf '%s/%s\n' "$dir" "$name" | grep -Eq -- "$pattern"; then
		continue
	fi
	ran=$((ran + 1))
	start=$(date +%s)
	corpus="$dir/testdata/fuzz/$name"
	before=$(inputs "$corpus")
	mod=$(module "$dir")
	rel=${dir#"$mod"}
	pkg=./${rel#/}
	if (cd "$mod" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg") >"$log/out" 2>&1; then
		result=ok
	elif [ "$(inputs "$corpus")" -eq "$before" ] &&
		grep -q '^    context deadline exceeded$' "$log/out"; then
		result=race # golang/go#75804: no input written, nothing failed
		races=$((races + 1))
	else
		result=FAIL
		failed=$((failed + 1))
	fi
	execs=$(grep -o 'execs: [0-9]*' "$log/out" | tail -n1 | cut -d' ' -f2 || true)
	printf '%-4s %-28s %-34s %6ss %10s execs\n' "$result" "$dir" "$name" "$(($(date +%s) - start))" "${execs:-?}"
	if [ "$result" = FAIL ]; then
		sed 's/^/    /' "$log/out" | tail -n 30
	fi
done <<<"$targets"

echo "$ran targets, $failed failed, $races ended by golang/go#75804 (fuzztime $fuzztime each)"
[ "$failed" -eq 0 ]
