#!/bin/sh
# Builds the gateway as the container image ships it: a static binary
# (no cgo, so no libc to load), without symbol tables, with paths trimmed.
# The Dockerfile's build stage runs this script, and so does CI, whose
# deploy tests check that the result is statically linked and runs.
#
#   scripts/build-static.sh OUT        (default ./switchover)
#
# VERSION (default dev) and COMMIT (default: vcs.revision from the build
# info, when .git is there) are stamped in; `switchover version` prints
# them. GOOS and GOARCH are honoured for cross builds.
set -eu
cd "$(dirname "$0")/.."
out=${1:-switchover}
version=${VERSION:-dev}
commit=${COMMIT:-}
CGO_ENABLED=0 exec go build -trimpath \
	-ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
	-o "$out" ./cmd/switchover
