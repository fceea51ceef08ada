// Package route is switchover's routing engine, usable on its own as a Go
// library: backends (one file per provider: OpenAI and compatible servers,
// Azure OpenAI, Anthropic, Gemini), pools of them with priorities, weights
// and selection strategies, and the routing decision that sends a request
// to them: the queue for quota (waitForQuota), the fallback chain
// (followFallbacks), the attempts over members with retries that select
// again (tryMembers) and the hedge (tryHedged), all in decide.go. A Pool is
// an http.RoundTripper, so an official SDK's client can run the engine
// in-process; the gateway serves the same code.
//
// Each backend has a circuit breaker (package breaker) that hears every
// attempt's outcome with its failure kind, and quota state read from the
// backend's rate-limit headers. The engine imports no configuration,
// server or third-party package: package engine builds pools from a
// switchover configuration, and package proxy serves them.
package route
