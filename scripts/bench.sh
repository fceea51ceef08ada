#!/usr/bin/env bash
# Builds switchover and runs `switchover bench`: the gateway side by side
# with nginx (when installed), Go's stock httputil.ReverseProxy and the
# mock upstream called directly. Arguments go to the command:
#
#   scripts/bench.sh                 # the full run, about four minutes
#   scripts/bench.sh -quick          # a smoke run
#   scripts/bench.sh -json > bench.json
#
# See docs/performance.md for what each row means and how it is measured.
# Linux only (reads /proc). Needs Go; wrk, nginx and strace are used when
# installed (apt-get install -y wrk nginx-light strace).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/switchover" ./cmd/switchover
"$tmp/switchover" bench "$@"
