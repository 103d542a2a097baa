#!/usr/bin/env bash
# Runs every `go test -fuzz` target of the project for a short, bounded time
# each (default 5s): the parsers of untrusted input (addresses, ids, hex, page
# tokens, comma lists, dates, JSON bodies, JSON-RPC requests, blocks).
# Usage: scripts/fuzz.sh [DURATION]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-5s}"
pkgs=$(grep -rl --include='*_test.go' '^func Fuzz' internal | xargs -n1 dirname | sort -u)
for dir in $pkgs; do
  for target in $(grep -ho "^func Fuzz[A-Za-z0-9_]*" "$dir"/*_test.go | sed "s/^func //" | sort -u); do
    echo "fuzz ./$dir $target ($fuzztime)"
    go test "./$dir" -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -parallel=2 >/tmp/fuzz.out 2>&1 || { cat /tmp/fuzz.out; exit 1; }
  done
done
echo "fuzz: all targets passed"
