#!/usr/bin/env bash
# How much memory does an open stream cost the gateway? Opens N streams
# (default 1,000) through switchover to a loopback simulator whose streams
# stall after three events (so every stream stays open), and prints the
# gateway process's resident memory (VmRSS from /proc) before and with the
# streams open. The client and the simulator are separate processes, so
# the figure is the gateway's alone.
#
#   scripts/streams-rss.sh            # 1,000 streams
#   STREAMS=2000 scripts/streams-rss.sh
#
# Linux only (reads /proc). Needs Go and curl.
set -euo pipefail
cd "$(dirname "$0")/.."

STREAMS=${STREAMS:-1000}
RATE=${RATE:-250} # streams opened per second
UP_PORT=${UP_PORT:-18291}
GW_PORT=${GW_PORT:-18290}
KEY=rss-key-0123456789abcdef0123456789abcdef

ulimit -n "$(( STREAMS * 4 + 1024 ))" 2>/dev/null || true

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

go build -o "$tmp/switchover" ./cmd/switchover

"$tmp/switchover" sim --regions rss --flavour openai --deployment rss-model \
	--rpm 0 --tpm 0 --latency 0 --seed 1 --listen "127.0.0.1:$UP_PORT" >"$tmp/sim.log" 2>&1 &
pids+=($!)

cat >"$tmp/gw.yaml" <<YAML
listen: 127.0.0.1:$GW_PORT
log: {level: warn}
server: {metrics_on_api: true}
keys:
  - {name: rss, key: $KEY}
backends:
  - {name: upstream, type: openai, url: "http://127.0.0.1:$UP_PORT/rss/v1", region: loopback}
pools:
  - name: rss-model
    members: [{backend: upstream}]
YAML
"$tmp/switchover" serve -c "$tmp/gw.yaml" >"$tmp/gw.log" 2>&1 &
gw=$!
pids+=($gw)

for _ in $(seq 100); do
	curl -fs "http://127.0.0.1:$GW_PORT/readyz" >/dev/null 2>&1 && curl -fs "http://127.0.0.1:$UP_PORT/_sim/stats" >/dev/null 2>&1 && break
	sleep 0.1
done

rss() { awk '/^VmRSS/ {print $2}' "/proc/$gw/status"; }

# Warm up: a few whole streams, so the baseline has its pools and caches.
"$tmp/switchover" load -q -url "http://127.0.0.1:$GW_PORT/v1/chat/completions" -model rss-model -key "$KEY" \
	-concurrency 4 -n 20 -stream -max-tokens 8 >/dev/null
before=$(rss)

curl -fs -X POST "http://127.0.0.1:$UP_PORT/_sim/deployments/rss/fault" -d '{"mode":"stall_stream","after":3}' >/dev/null

"$tmp/switchover" load -q -url "http://127.0.0.1:$GW_PORT/v1/chat/completions" -model rss-model -key "$KEY" \
	-rate "$RATE" -n "$STREAMS" -stream -max-tokens 64 -timeout 60s -duration 60s >"$tmp/load.txt" 2>&1 &
pids+=($!)

# Wait until every stream is open: the gateway holds one upstream
# connection per stream.
open=0
for _ in $(seq 300); do
	open=$(ss -Htn state established "( dport = :$UP_PORT )" 2>/dev/null | wc -l)
	[ "$open" -ge "$STREAMS" ] && break
	sleep 0.1
done
sleep 2 # let the heap settle
with=$(rss)
echo "streams open (gateway to upstream connections): $open"
echo "gateway VmRSS before: $(( before / 1024 )) MiB, with $STREAMS streams open: $(( with / 1024 )) MiB"
echo "per stream: $(( (with - before) * 1024 / STREAMS / 1024 )) KiB"
# The binary's pages (RssFile) are part of VmRSS; a binary just written by
# the linker can show several MiB more of them than the same file copied
# later, so compare RssAnon across builds.
grep -E '^(RssAnon|RssFile)' "/proc/$gw/status"
curl -fs "http://127.0.0.1:$GW_PORT/metrics" | grep -E '^(go_goroutines|go_memstats_(heap_inuse|stack_inuse|sys)_bytes|go_gc_gogc_percent) ' || true
