#!/usr/bin/env bash
# Runs `permafrost demo` and drives the official TypeScript SDK against it
# (check.mjs). Needs Node 20+ and npm; installs the pinned SDK itself.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
npm ci --no-audit --no-fund --loglevel=error >/dev/null

work="$(mktemp -d)"
trap 'kill "$demo_pid" 2>/dev/null || true; wait "$demo_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/permafrost" ./cmd/permafrost)
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
base="http://127.0.0.1:$port"
(cd "$root" && exec "$work/permafrost" demo --listen "127.0.0.1:$port" --export-dir "$work/exports") >"$work/demo.out" 2>"$work/demo.log" &
demo_pid=$!

for _ in $(seq 1 600); do
  if node -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$base/v1/health-check"; then break; fi
  if ! kill -0 "$demo_pid" 2>/dev/null; then cat "$work/demo.log"; echo "sdk: the demo exited" >&2; exit 1; fi
  sleep 0.2
done
key="$(sed -n 's/^A demo API key with every scope: //p' "$work/demo.out")"
if [ -z "$key" ]; then cat "$work/demo.out" "$work/demo.log"; echo "sdk: no demo key" >&2; exit 1; fi
node "$here/check.mjs" "$base" "$key" "$root/testdata/devnet-a"
