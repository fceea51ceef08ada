#!/usr/bin/env bash
# How much memory does an open stream cost the gateway? Runs the memory
# measure of `switchover bench` alone: STREAMS streams (default 1,000)
# held open through the gateway, with an HTTP/1.1 and an HTTP/2 upstream,
# and the gateway's resident memory (VmRSS) before and with them open.
#
#   scripts/streams-rss.sh                 # 1,000 streams
#   STREAMS=2000 scripts/streams-rss.sh
#   scripts/streams-rss.sh -targets nginx,switchover,go-proxy
#
# Linux only (reads /proc). Needs Go. See docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/switchover" ./cmd/switchover
"$tmp/switchover" bench -only memory -targets switchover \
	-open-streams "${STREAMS:-1000}" -open-rate "${RATE:-250}" "$@"
