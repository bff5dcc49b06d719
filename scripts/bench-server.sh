#!/usr/bin/env bash
# Benchmarks `agentry serve` as issue 4 asks: a scripted-model agent on a fresh
# SQLite file, loaded from a separate `agentry loadtest` process on loopback at
# 32 concurrent clients; non-streaming runs/s and latency, then SSE time to
# first event at 32 clients and at 1. Targets on 2 cores: >= 3,000 runs/s, p99 < 25 ms, first event
# < 2 ms p50.
#
# Usage: scripts/bench-server.sh            (from anywhere inside the repo)
# Environment knobs (defaults in brackets):
#   PORT [a free port from 20000-29999]  CONCURRENCY [32]  DURATION [10s]  WARMUP [2s]
#   JSON=1        print JSON reports instead of tables
#   SERVE_FLAGS   extra `agentry serve` flags [--log-level warn: no access log
#                 line per request, so the numbers measure runs, not logging]
#   AGENTRY=path  use this binary instead of building ./cmd/agentry
#   LOADGEN=path  run `loadtest` from this agentry binary [the served one]: keeps
#                 the load generator fixed while comparing servers of other commits
#   PHASES        which runs, space separated [sync sse sse1]: sync = non-streaming,
#                 sse = streaming at CONCURRENCY clients, sse1 = streaming, 1 client
#   KEEP=1        keep the temp dir (config, script, database, server log)
#   SERVER_GOMAXPROCS / LOADGEN_GOMAXPROCS  split the cores between the two
# Exit status: 0 when both runs had no failed request, 1 otherwise.
set -euo pipefail

PORT=${PORT:-}
CONCURRENCY=${CONCURRENCY:-32}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
HOST=127.0.0.1 # loopback only: `agentry loadtest` refuses other hosts

# listening PORT: whether something already accepts connections there.
listening() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# Another server on our port would answer /health and be measured instead of
# ours, so the port must be free before we start.
if [[ -z $PORT ]]; then
	for _ in $(seq 1 50); do
		PORT=$((20000 + RANDOM % 10000))
		listening "$PORT" || break
	done
fi
if listening "$PORT"; then
	echo "port $PORT on $HOST is already in use; set PORT to a free one" >&2
	exit 1
fi
BASE="http://$HOST:$PORT"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/agentry-bench.XXXXXX")
server_pid=

cleanup() {
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ ${KEEP:-0} == 1 ]]; then
		echo "kept $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bin=${AGENTRY:-}
if [[ -z $bin ]]; then
	echo "building agentry…" >&2
	(cd "$root" && go build -o "$work/agentry" ./cmd/agentry)
	bin=$work/agentry
fi
if ! "$bin" serve --help >/dev/null 2>&1; then
	echo "this agentry has no 'serve' command yet; nothing to benchmark" >&2
	exit 2
fi
loadgen=${LOADGEN:-$bin}
if ! "$loadgen" loadtest --help >/dev/null 2>&1; then
	echo "$loadgen has no 'loadtest' command" >&2
	exit 2
fi
PHASES=${PHASES:-sync sse sse1}
for phase in $PHASES; do
	case $phase in
	sync | sse | sse1) ;;
	*)
		echo "unknown phase $phase in PHASES (use sync, sse, sse1)" >&2
		exit 2
		;;
	esac
done
# Media and offloaded results go to the temp dir, not ./agentry-data (older
# builds have no --data-dir and write nothing there).
data_dir=()
if "$bin" serve --help 2>&1 | grep -q -- --data-dir; then
	data_dir=(--data-dir "$work/data")
fi

# One short reply: the model answers instantly, so the numbers measure the
# server (routing, form decoding, the agent loop, SQLite writes, JSON/SSE).
cat >"$work/bench.script.yaml" <<'YAML'
id: scripted-bench
on_exhausted: repeat_last
turns:
  - content: Hello from the benchmark agent.
YAML

cat >"$work/agentos.yaml" <<YAML
server:
  host: $HOST
  port: $PORT
db:
  id: bench-db
  dsn: $work/bench.db
agents:
  - id: bench
    name: Bench
    description: Scripted agent for scripts/bench-server.sh.
    model: scripted:$work/bench.script.yaml
YAML

echo "starting agentry serve on $BASE (SQLite $work/bench.db)…" >&2
# An empty GOMAXPROCS is ignored by the Go runtime (all cores). SERVE_FLAGS is
# split into words on purpose.
# shellcheck disable=SC2086
GOMAXPROCS=${SERVER_GOMAXPROCS:-} "$bin" serve --config "$work/agentos.yaml" --db "$work/bench.db" --port "$PORT" "${data_dir[@]}" ${SERVE_FLAGS---log-level warn} \
	>"$work/server.log" 2>&1 &
server_pid=$!

ready=0
for _ in $(seq 1 300); do
	if ! kill -0 "$server_pid" 2>/dev/null; then
		echo "agentry serve exited early; its log:" >&2
		cat "$work/server.log" >&2
		exit 1
	fi
	if curl -fsS --max-time 1 "$BASE/health" >/dev/null 2>&1; then
		ready=1
		break
	fi
	sleep 0.1
done
if [[ $ready == 1 ]] && ! kill -0 "$server_pid" 2>/dev/null; then
	echo "agentry serve exited right after start; its log:" >&2
	cat "$work/server.log" >&2
	exit 1
fi
if [[ $ready != 1 ]]; then
	echo "agentry serve did not answer $BASE/health within 30s; its log:" >&2
	tail -n 50 "$work/server.log" >&2
	exit 1
fi

status=0
loadtest() {
	local title=$1
	shift
	echo
	echo "== $title =="
	# Later flags win, so a run may override --concurrency.
	local args=(loadtest --url "$BASE" --agent bench --concurrency "$CONCURRENCY"
		--duration "$DURATION" --warmup "$WARMUP" "$@")
	[[ ${JSON:-0} == 1 ]] && args+=(--json)
	local rc=0
	GOMAXPROCS=${LOADGEN_GOMAXPROCS:-} "$loadgen" "${args[@]}" || rc=$?
	if [[ $rc != 0 ]]; then
		echo "(loadtest exited with status $rc)" >&2
		status=1
	fi
}

for phase in $PHASES; do
	case $phase in
	sync) loadtest "non-streaming runs (stream=false), $CONCURRENCY clients" ;;
	sse) loadtest "streaming runs (SSE), $CONCURRENCY clients" --stream ;;
	# At 32 clients on 2 cores the first event also waits for a core; one
	# client shows the server's own time to RunStarted.
	sse1) loadtest "streaming runs (SSE), 1 client: time to first event without queueing" --stream --concurrency 1 ;;
	esac
done

if ! kill -0 "$server_pid" 2>/dev/null; then
	echo "agentry serve died during the benchmark" >&2
	status=1
fi
if [[ $status != 0 ]]; then
	echo
	echo "last server log lines:" >&2
	tail -n 20 "$work/server.log" >&2
fi
exit $status
