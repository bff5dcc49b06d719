#!/usr/bin/env bash
# Runs client.mjs (the official TypeScript MCP SDK, from npm) against a fresh
# `agentry serve` with JWT auth, user isolation and mcp_server: true. The npm
# packages are installed once into a cache outside the clone
# (AGENTRY_NPM_CACHE, default ~/.cache/agentry) and reused while
# package-lock.json is unchanged.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${AGENTRY_NPM_CACHE:-$HOME/.cache/agentry}/mcp-interop
stamp=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$cache/.stamp" 2>/dev/null)" != "$stamp" ]; then
	rm -rf "$cache" && mkdir -p "$cache"
	cp "$here/package.json" "$here/package-lock.json" "$cache/"
	(cd "$cache" && npm ci --no-audit --no-fund --loglevel=error)
	echo "$stamp" >"$cache/.stamp"
fi
cp "$here/client.mjs" "$cache/"

work=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
cat >"$work/echo.yaml" <<YAML
turns:
  - content: hi from the scripted agent
on_exhausted: repeat_last
YAML
cat >"$work/os.yaml" <<YAML
server: {port: $port}
db: {dsn: $work/agentry.db}
auth:
  jwt:
    algorithm: HS256
    verification_keys: ["$secret"]
user_isolation: true
mcp_server: true
agents:
  - id: echo
    model: scripted:echo.yaml
YAML
(cd "$root" && go build -o "$work/agentry" ./cmd/agentry)
"$work/agentry" serve --config "$work/os.yaml" --data-dir "$work/data" >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
	if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
	sleep 0.1
done
if ! node "$cache/client.mjs" "http://127.0.0.1:$port/mcp" "$secret"; then
	echo "--- agentry serve log"; cat "$work/serve.log"
	exit 1
fi
