#!/usr/bin/env bash
# Runs every `go test -fuzz` target of the project for a bounded number of
# executions each (default 20000x): the parsers of untrusted input (addresses, ids, hex, page
# tokens, comma lists, dates, JSON bodies, JSON-RPC requests, blocks).
# Usage: scripts/fuzz.sh [BUDGET]
# The budget is a count (Nx), not a duration: with a duration Go's fuzz
# coordinator (go1.26) can report a spurious "context deadline exceeded" when
# the deadline fires while a worker is mid-run on a loaded machine
# (golang/go#75804, fixed in go1.27). A count has no deadline to race.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-20000x}"
pkgs=$(grep -rl --include='*_test.go' '^func Fuzz' internal | xargs -n1 dirname | sort -u)
for dir in $pkgs; do
  for target in $(grep -ho "^func Fuzz[A-Za-z0-9_]*" "$dir"/*_test.go | sed "s/^func //" | sort -u); do
    echo "fuzz ./$dir $target ($fuzztime)"
    go test "./$dir" -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -parallel=2 >/tmp/fuzz.out 2>&1 || { cat /tmp/fuzz.out; exit 1; }
  done
done
echo "fuzz: all targets passed"
