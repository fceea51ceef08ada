// Package deploy holds what an operator loads next to the gateway:
// Prometheus recording and alerting rules (prometheus/alerts.yml, with
// promtool unit tests in prometheus/alerts_test.yml) and a Grafana
// dashboard (grafana/switchover.json). See README.md.
//
// The package has no code. Its tests parse every PromQL expression in the
// rules and the dashboard and check the metric and label names against the
// metrics the gateway exports (metrics.New), so that a renamed metric or
// label breaks the build instead of an alert that silently never fires.
// They also scrape the real exporter, fed with real breaker transitions,
// and evaluate the alerting rules against those series with promtool
// (when it is installed), so that an alert that would fire for healthy
// backends fails too.
//
// The same tests check what runs the gateway, since no Docker engine or
// init system runs in CI: the Dockerfile (../Dockerfile) and the static
// binary its build script makes, and the systemd unit
// (systemd/switchover.service) against the config's shutdown defaults.
// The Helm chart has a package of its own, deploy/helm, so that only its
// test compiles Helm.
package deploy
