#!/usr/bin/env bash
# What does the gateway add to a call? Runs wrk (a standard HTTP load tool)
# against a loopback upstream directly, then through switchover, and prints
# both side by side: requests per second at full load, and latency at a
# fixed, moderate rate.
#
#   scripts/bench.sh                 # defaults below
#   DURATION=30s CONNS=128 scripts/bench.sh
#   LIMITS=1 scripts/bench.sh        # the key with every limit and a budget (none reached)
#
# The upstream is switchover's own simulator with no latency and no quota,
# so the numbers measure the HTTP path, not a model. Everything (wrk, the
# simulator, the gateway) shares this machine's cores: on a small machine
# the three compete, so read the gateway's numbers relative to the direct
# ones. Needs wrk (apt-get install -y wrk) and Go.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
THREADS=${THREADS:-2}
UP_PORT=${UP_PORT:-18191}
GW_PORT=${GW_PORT:-18190}

if ! command -v wrk >/dev/null; then
	if [ "$(id -u)" = 0 ]; then apt-get install -y wrk >/dev/null || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
	else echo "wrk is needed: sudo apt-get install -y wrk" >&2; exit 1; fi
fi

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

go build -o "$tmp/switchover" ./cmd/switchover

"$tmp/switchover" sim --regions bench --flavour openai --deployment bench-model \
	--rpm 0 --tpm 0 --latency 0 --seed 1 --listen "127.0.0.1:$UP_PORT" >"$tmp/sim.log" 2>&1 &
pids+=($!)

limits=""
if [ "${LIMITS:-}" = 1 ]; then
	# Every limit a key can have, none of them reached: what enforcing
	# them costs.
	limits=", team: bench-team, rpm: 100m, tpm: 100000m, max_concurrent: 100000, budget: 1000000/day"
fi
cat >"$tmp/gw.yaml" <<YAML
listen: 127.0.0.1:$GW_PORT
log: {level: warn}
teams:
  - {name: bench-team, rpm: 100m, tpm: 100000m}
keys:
  - {name: bench, key: bench-key-0123456789abcdef$limits}
backends:
  - {name: upstream, type: openai, url: "http://127.0.0.1:$UP_PORT/bench/v1", region: loopback}
pools:
  - name: bench-model
    members: [{backend: upstream}]
YAML
"$tmp/switchover" serve -c "$tmp/gw.yaml" >"$tmp/gw.log" 2>&1 &
pids+=($!)

for _ in $(seq 100); do
	curl -fs "http://127.0.0.1:$GW_PORT/readyz" >/dev/null 2>&1 && curl -fs "http://127.0.0.1:$UP_PORT/_sim/stats" >/dev/null 2>&1 && break
	sleep 0.1
done

cat >"$tmp/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body   = '{"model":"bench-model","max_tokens":8,"messages":[{"role":"user","content":"Say hello in one word."}]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer bench-key-0123456789abcdef"
LUA

direct="http://127.0.0.1:$UP_PORT/bench/v1/chat/completions"
gateway="http://127.0.0.1:$GW_PORT/v1/chat/completions"

# Sanity: both answer 200.
for u in "$direct" "$gateway"; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$u" -H 'Authorization: Bearer bench-key-0123456789abcdef' \
		-d '{"model":"bench-model","messages":[{"role":"user","content":"hi"}]}')
	[ "$code" = 200 ] || { echo "$u answered $code" >&2; cat "$tmp"/*.log >&2; exit 1; }
done

run() { # label url threads conns
	wrk -t"$3" -c"$4" -d"$DURATION" --latency -s "$tmp/post.lua" "$2" >"$tmp/$1.txt" 2>&1
	rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/$1.txt")
	p50=$(awk '$1=="50%" {print $2}' "$tmp/$1.txt")
	p99=$(awk '$1=="99%" {print $2}' "$tmp/$1.txt")
	errs=$(awk '/Non-2xx|Socket errors/ {print}' "$tmp/$1.txt" | tr '\n' ' ')
	printf '%-8s %12s %10s %10s  %s\n' "$1" "$rps" "$p50" "$p99" "${errs:-no errors}"
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
echo "one POST chat completion per request, $DURATION per run${LIMITS:+, the key with every limit}"
echo
echo "throughput: wrk -t$THREADS -c$CONNS"
printf '%-8s %12s %10s %10s\n' "target" "requests/s" "p50" "p99"
run direct "$direct" "$THREADS" "$CONNS"
run gateway "$gateway" "$THREADS" "$CONNS"
echo
echo "added latency, one request at a time: wrk -t1 -c1"
printf '%-8s %12s %10s %10s\n' "target" "requests/s" "p50" "p99"
run direct "$direct" 1 1
run gateway "$gateway" 1 1
