# syntax=docker/dockerfile:1
# The switchover gateway: a static binary on an empty base, as a non-root
# user. See docs/deploy.md.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse --short=12 HEAD) -t switchover .
#   docker run --rm -p 8080:8080 -v "$PWD/switchover.yaml:/etc/switchover/switchover.yaml:ro" \
#     -v switchover-data:/var/lib/switchover -e SWITCHOVER_KEY -e OPENAI_API_KEY switchover
#
# The configuration must listen on ":8080" (or 0.0.0.0:8080) to be reached
# from outside the container, and so needs keys.

# The Go version of go.mod's go line (a test checks they agree).
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
# The same build CI runs and tests (scripts/build-static.sh): CGO_ENABLED=0
# go build -trimpath -ldflags "-s -w -X main.version=… -X main.commit=…".
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	VERSION="$VERSION" COMMIT="$COMMIT" scripts/build-static.sh /out/switchover \
	&& /out/switchover version \
	&& mkdir -p /out/tmp /out/etc/switchover /out/var/lib/switchover && chmod 1777 /out/tmp

# scratch: nothing but the binary, the CA certificates it needs for HTTPS
# to the providers, and an empty /tmp. No shell: the healthcheck is the
# binary's own "health" command.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/tmp /tmp
COPY --from=build /out/etc/switchover /etc/switchover
# The embedded store's directory (store: {sqlite: /var/lib/switchover/switchover.db}),
# owned by the gateway's user; mount a volume here to keep keys and usage.
COPY --from=build --chown=65532:65532 /out/var/lib/switchover /var/lib/switchover
COPY --from=build /out/switchover /switchover
# 65532 is the conventional "nonroot" user of minimal images; nothing in
# the image is writable by it but /tmp and /var/lib/switchover.
USER 65532:65532
# 8080: the API, /readyz, /healthz and /metrics. 8081: the admin API, when
# the configuration turns it on.
EXPOSE 8080 8081
# GET /readyz on the API port; unhealthy while the gateway drains for a
# shutdown. Set SWITCHOVER_HEALTH_URL if the configuration listens elsewhere.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
	CMD ["/switchover", "health", "-q"]
# docker stop sends SIGTERM: the gateway drains (server.drain_delay) and
# lets requests finish (server.shutdown_grace), so give it
# docker stop -t 45 (or stop_grace_period: 45s in Compose).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/switchover"]
CMD ["serve", "-c", "/etc/switchover/switchover.yaml"]
