#!/usr/bin/env bash
# Runs the peer comparison: the frameworks interleaved over ROUNDS rounds (so a
# load change hits all of them alike), then prints per row the median ns/op,
# B/op and allocs/op of each framework and its time relative to Agentry.
# Usage: bench/peers/run.sh [ROUNDS] [BENCHTIME]   (defaults 5 and 200ms)
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-5}
benchtime=${2:-200ms}
frameworks=(Agentry EinoReact EinoADK LangChainGo)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go test -c -o "$tmp/peers.test" . >/dev/null
"$tmp/peers.test" -test.run '^TestSameWork$' >/dev/null # refuse to time frameworks that did different work

for r in $(seq 1 "$rounds"); do
	for fw in "${frameworks[@]}"; do
		"$tmp/peers.test" -test.run '^$' -test.bench "/^${fw}\$" -test.benchmem -test.benchtime="$benchtime" |
			awk '/^Benchmark/ { split($1, p, "/"); sub(/^Benchmark/, "", p[1]); sub(/-[0-9]+$/, "", p[2]);
				print p[1], p[2], $3, $5, $7 }' >>"$tmp/samples"
	done
done

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $(go version | cut -d' ' -f3), $rounds rounds x $benchtime"
echo "| row | framework | median time | B/op | allocs/op | time vs Agentry |"
echo "|---|---|---|---|---|---|"
# median of each (row, framework); then ratio against Agentry's median.
sort -k1,1 -k2,2 -k3,3n "$tmp/samples" | awk '
	function flush() { if (n) { m = int((n + 1) / 2); med[key] = ns[m]; by[key] = b[m]; al[key] = a[m]; order[++k] = key } n = 0 }
	{ kk = $1 " " $2; if (kk != key) { flush(); key = kk } n++; ns[n] = $3; b[n] = $4; a[n] = $5 }
	END {
		flush()
		for (i = 1; i <= k; i++) { split(order[i], p, " "); if (p[2] == "Agentry") base[p[1]] = med[order[i]] }
		for (i = 1; i <= k; i++) {
			split(order[i], p, " "); v = med[order[i]]
			t = v >= 1e6 ? sprintf("%.2f ms", v / 1e6) : (v >= 1e3 ? sprintf("%.1f µs", v / 1e3) : sprintf("%.0f ns", v))
			printf "| %s | %s | %s | %d | %d | %.2f× |\n", p[1], p[2], t, by[order[i]], al[order[i]], v / base[p[1]]
		}
	}'
