package engine

import (
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/entra"
	"github.com/switchover-gw/switchover/gcpauth"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// Deps are what an engine reports to and draws on. The zero value is
// valid: the wall clock, no observer, nothing told of transitions or
// failures, quotas kept in the process, no operator overrides, and
// callers known by the configuration's keys alone, without limits.
type Deps struct {
	// Clock drives breakers, selection, queues and hedges. Nil means the
	// wall clock.
	Clock breaker.Clock
	// Observer receives every engine event of every pool. Nil means none.
	Observer route.Observer
	// OnTransition receives every breaker transition (see
	// breaker.Settings.OnTransition). Nil means none.
	OnTransition func(breaker.Transition)
	// OnFailure, if set, gives a backend's breaker its OnFailure (a
	// fleet counts failures across replicas); nil, or a nil result,
	// means none.
	OnFailure func(backend string) func(breaker.Outcome, time.Time)
	// Quota, if set, wraps a quota-aware backend's local quota (a fleet
	// shares the figures each replica hears). Nil means the local quota
	// alone.
	Quota func(backend string, q *route.LocalQuota) route.Quota
	// Entra supplies Entra ID token sources for Azure backends that use
	// them. Nil means a registry made for the one Build: pass the same
	// registry to every Build to share tokens across reloads.
	Entra *entra.Registry
	// GCP supplies Google access tokens for vertex backends. Nil means
	// the engine before's registry, else one made for the Build.
	GCP *gcpauth.Registry
	// Override, if set, is an operator's change to a member: a priority
	// or weight above zero replaces the configured one. Nil means none.
	Override func(pool, backend string) (priority, weight int)
	// Resolver and Admission are the request pipeline's tenancy hooks
	// (proxy.Routes.Resolver and Admission): who a caller is, and whether
	// its request may start. The gateway's key directory and limiter
	// outlive every engine it builds. Nil means the configuration's keys
	// (Routes.Keys), without limits.
	Resolver  proxy.KeyResolver
	Admission proxy.Admission
	// Tokens counts the tokens of answers that report no usage (every
	// pool's route.Pool.Tokens). Nil means a tokens.Counter: OpenAI's
	// encodings, Anthropic's and Google's characters per token.
	Tokens route.TokenCounter
	// Index keeps the owners of stored objects without metadata
	// (proxy.Routes.Index); the gateway's outlives every engine it
	// builds. Nil means none: lists of files, uploads, containers and
	// message batches show a key none of them.
	Index route.OwnerIndex
	// Probed says that the caller runs the backends' recovery probes
	// (the gateway does): a backend benched for a failure is then
	// probed every probe.recovery_interval, and the Retry-After clients
	// get follows that (route.Backend.ProbeInterval). False means
	// nothing probes the backends: Retry-After follows their trips.
	Probed bool
	// Cache is the response cache's store and flights
	// (proxy.Routes.Cache), which the gateway's outlives every engine it
	// builds. Nil means the engine before's, else one made for this
	// Build, in process, when the configuration turns the cache on.
	Cache *proxy.ResponseCache
	// CacheObserver hears the response cache made for a Build (when
	// Cache is nil): hits, misses, stores and evictions. Nil means none.
	CacheObserver proxy.CacheObserver
}
