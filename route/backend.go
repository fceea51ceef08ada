package route

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// Backend is one upstream deployment: where to send a call, how, and the
// breaker that benches it when it fails. A Backend may belong to several
// pools; its breaker is shared by all of them. Fields must not change once
// the backend is in use. A Backend is safe for concurrent use.
type Backend struct {
	// Name identifies the backend in headers, metrics and logs. Required.
	Name string
	// Region is reported in the x-switchover-region header. Optional.
	Region string
	// Provider builds each attempt's request. Required.
	Provider Provider
	// Transport sends the requests. Nil means a transport from
	// NewTransport with default settings, shared by all backends that
	// leave it nil.
	Transport http.RoundTripper
	// Breaker benches the backend after failures. Nil means never benched.
	Breaker breaker.Interface
	// Counts reports whether an upstream status counts as a breaker
	// failure. Nil means 429 and 500-599. Connection errors and timeouts
	// always count.
	Counts *StatusSet
	// FirstByteTimeout bounds the wait for response headers and, for a
	// stream, the first bytes of the body. A hung backend then costs this
	// long, not Timeout. Zero means no separate bound.
	FirstByteTimeout time.Duration
	// StreamFirstByteTimeout replaces FirstByteTimeout for streaming
	// requests, whose headers and first event come quickly from a healthy
	// backend, while a non-streaming answer's headers wait for the whole
	// completion. Zero means FirstByteTimeout.
	StreamFirstByteTimeout time.Duration
	// Timeout bounds a whole attempt, including reading the body. Zero
	// means none; the caller's context still applies.
	Timeout time.Duration
	// IdleTimeout bounds the gap between two reads of a response body, so a
	// stream that stalls mid-way ends instead of hanging. Zero means none.
	IdleTimeout time.Duration

	// ProbeInterval is how often something outside the engine (the
	// gateway's recovery probe, probe.recovery_interval) checks the
	// backend while its breaker is open for a failure, a passing probe
	// ending the trip. A client that every member refused is then told to
	// come back (Retry-After) no later than that, when the gateway will
	// know again, not at the end of a trip a probe may cut short. Zero
	// means nothing probes the backend: the trip's end is the answer.
	ProbeInterval time.Duration

	// HealthCheck is how the backend is checked when a call waits past its
	// slow threshold (see Pool): a one-token chat call (ProbeChat, the
	// default for "") or a list of models (ProbeModels). Any answer below
	// 500 means the backend is alive.
	HealthCheck ProbeKind
	// Quota, if set, is what the backend has said of its rate limits
	// (LocalQuota reads the x-ratelimit-* and anthropic-ratelimit-*
	// headers of its answers): a call it says will not fit is not sent to
	// the backend, which is passed over until its window resets, without a
	// refused call. Nil means no such tracking: a backend out of quota is
	// found by its 429.
	Quota Quota

	model        atomic.Pointer[string] // the model version it last answered with
	modelChecked atomic.Int64           // unix nanos of the last response read for it
	drained      atomic.Bool
	inflight     atomic.Int64 // attempts in flight (see InFlight)
	lat          latency
	events       latency // times to a stream's first event, content or not (see commit.go)
	check        checker
	turns        rampTurns // its share of calls during a slow start
}

// SlowAfter is how long a call of the kind (streamed or plain) may wait
// for its first byte before it counts as slow and the backend is checked,
// judged from the backend's own answers alone: three times the 95th
// percentile of its recent times to first byte, at least 3 s (plain) or
// 2 s (streams), 15 s or 5 s before eight calls of that kind have
// answered, and never more than the first-byte timeout. In a pool, a
// backend that has answered fewer than eight is judged with its peers
// (Pool.SlowAfter).
func (b *Backend) SlowAfter(stream bool) time.Duration {
	return b.lat.slowAfter(stream, b.firstByteTimeout(stream))
}

// CheckTimeout bounds one health check or probe of the backend: four
// times the 95th percentile of its recent passing checks (before there
// are any, of its times to first byte), between 2 s and 10 s. In a pool,
// a backend with nothing measured is judged with its peers
// (Pool.CheckTimeout).
func (b *Backend) CheckTimeout() time.Duration { return b.lat.checkTimeout() }

// redactedError is an error whose text has had a backend's credentials
// removed; errors.Is and errors.As still see the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Drain stops new traffic to the backend (requests in flight finish);
// Restore lets it take traffic again. Safe for concurrent use.
func (b *Backend) Drain()   { b.drained.Store(true) }
func (b *Backend) Restore() { b.drained.Store(false) }

// Drained reports whether the backend is drained.
func (b *Backend) Drained() bool { return b.drained.Load() }

// Usable reports whether the backend would take a call at now: not
// drained, and its breaker lets calls through.
func (b *Backend) Usable(now time.Time) bool {
	ok, _ := b.usable(now)
	return ok
}

// Model returns the model version the backend last answered with (the
// response's "model", or Gemini's "modelVersion"), "" before any answer.
func (b *Backend) Model() string {
	if m := b.model.Load(); m != nil {
		return *m
	}
	return ""
}

func (b *Backend) firstByteTimeout(stream bool) time.Duration {
	if stream && b.StreamFirstByteTimeout > 0 {
		return b.StreamFirstByteTimeout
	}
	return b.FirstByteTimeout
}

func (b *Backend) counts(status int) bool {
	if b.Counts == nil {
		return status == http.StatusTooManyRequests || (status >= 500 && status <= 599)
	}
	return b.Counts.Has(status)
}

// StatusSet is a set of HTTP status codes (100-999). The zero value is empty.
type StatusSet struct{ bits [16]uint64 }

// NewStatusSet returns a set holding codes.
func NewStatusSet(codes ...int) *StatusSet {
	s := &StatusSet{}
	for _, c := range codes {
		s.Add(c)
	}
	return s
}

// Add adds a code. Codes outside 0-1023 are ignored.
func (s *StatusSet) Add(code int) {
	if code >= 0 && code < 1024 {
		s.bits[code/64] |= 1 << (code % 64)
	}
}

// AddRange adds every code from lo to hi inclusive.
func (s *StatusSet) AddRange(lo, hi int) {
	for c := lo; c <= hi; c++ {
		s.Add(c)
	}
}

// Has reports whether code is in the set.
func (s *StatusSet) Has(code int) bool {
	return code >= 0 && code < 1024 && s.bits[code/64]&(1<<(code%64)) != 0
}
