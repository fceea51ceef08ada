// Package helm holds the Helm chart of the gateway (switchover/, see
// docs/deploy.md). The package has no code: its tests render the chart
// with Helm's own Go packages, without a cluster, decode every object into
// the Kubernetes API types, and check what a broken chart would get wrong:
// replicas, probes on the gateway's real endpoints and ports, a
// termination grace period that covers the gateway's drain, the security
// context, the disruption budget, and a configuration the gateway's own
// loader accepts, with no secret value in a ConfigMap.
package helm
