package route

import (
	"context"
	"time"
)

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventAttempt: an attempt ended, at its response headers or its error.
	EventAttempt EventKind = iota + 1
	// EventFailover: a request was answered by a backend other than the one
	// it would have gone to with every backend healthy.
	EventFailover
	// EventBodyError: a response body failed after its headers were
	// passed on (a stream that broke mid-way).
	EventBodyError
	// EventModel: a backend answered with a model version other than the
	// one it answered with before (or its first).
	EventModel
	// EventMisconfigured: a backend answered 401, or 403 or 404 to a
	// chat call (Attempt has the status and the backend's message,
	// secrets redacted): its key or deployment is wrong. It has been benched and the request
	// failed over.
	EventMisconfigured
	// EventUnresponsive: a call waited past the backend's slow threshold
	// and a health check got no answer; the backend's breaker was opened
	// and the attempts waiting on it failed over. Err says what was seen.
	EventUnresponsive
	// EventQuotaHeld: a backend was passed over for a request because its
	// Quota said the call would not fit: no call was sent to find out.
	EventQuotaHeld
	// EventRetryBudget: a retry was refused because the pool's
	// RetryBudget was spent, and the request was answered with its last
	// failure at once. Backend is the member the retry would have gone
	// to.
	EventRetryBudget
	// EventFallback: a request left the pool (Pool, and From) for its
	// fallback pool (To), for the Cause given.
	EventFallback
	// EventQueued: a patient request joined the pool's queue to wait for
	// quota; Queue is how many now wait.
	EventQueued
	// EventDequeued: a queued request left the queue (answered, refused
	// past its deadline, or gone); Queue is how many still wait, Waited
	// how long it waited.
	EventDequeued
	// EventHedge: a hedged request ended (Hedge says which attempt won:
	// HedgePrimary, HedgeWon, HedgeNeither; Backend is the hedge's, From
	// the first attempt's), or a hedge was due but the hedge budget
	// refused it (HedgeRefused; Backend is the first attempt's).
	EventHedge
	// EventOperationUnsupported: a member answered that it does not serve
	// the operation Op (Attempt has the status and the backend's message,
	// secrets redacted): it is passed over for Op alone, for
	// UnsupportedHold, and not benched. Told once per mark.
	EventOperationUnsupported
	// EventProbe: a health check was sent to Backend on behalf of no
	// request (the pool's check of a slow backend, see Pool.slowCall; a
	// gateway tells its own probes the same way): one call to the backend
	// more than the requests made (a model call unless the backend's probe
	// kind is ProbeModels). Err is the check's failure, nil when it answered.
	EventProbe
	// EventShort: the pool became short of members (Pool.Short): a
	// request found no member to retry on after a failure it could have
	// retried, or none that would take it, or a health check began on the
	// last member that would take calls. Told at most once per
	// shortTellEvery per pool. A gateway probes the pool's benched
	// members at once rather than at its next round.
	EventShort
)

// Event is one thing the engine observed. Fields not relevant to the Kind
// are zero.
type Event struct {
	Kind EventKind
	// Ctx is the request's context for EventAttempt (tracing parents
	// attempt spans on it); nil otherwise.
	Ctx     context.Context
	Pool    string
	Backend *Backend
	// Attempt is set for EventAttempt, EventMisconfigured and
	// EventOperationUnsupported.
	Attempt *Attempt
	// From, To and Reason describe an EventFailover: From is the backend
	// that failed or was unavailable, To the one that answered.
	From, To string
	Reason   Reason
	// Err is set for EventBodyError and EventUnresponsive, and for an
	// EventProbe that failed.
	Err error
	// Model is set for EventModel.
	Model string
	// Cause is set for EventFallback.
	Cause FallbackCause
	// Queue and Waited are set for EventQueued and EventDequeued.
	Queue  int
	Waited time.Duration
	// Hedge is set for EventHedge.
	Hedge HedgeResult
	// Op is set for EventOperationUnsupported.
	Op Operation
}

// Observer receives engine events, for metrics and logs. Observe is called
// on the request's goroutine, never with a lock held; it must be fast and
// safe for concurrent use.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe implements Observer.
func (f ObserverFunc) Observe(e Event) { f(e) }

// Attempt is one upstream call made for a request.
type Attempt struct {
	Backend string
	Region  string
	// Priority is the member's priority tier.
	Priority int
	// Status is the upstream status, 0 when there was no response.
	Status int
	// Reason is ReasonOK when the response was passed on to the client.
	Reason Reason
	// Retryable is true when the attempt failed in a way another backend
	// may not.
	Retryable bool
	// Message is the upstream error message, or the transport error, for
	// failed attempts.
	Message string
	// RetryAfter is the wait the backend asked for, if any.
	RetryAfter time.Duration
	// Abandoned is true when the request had been sent and the attempt
	// was given up before an answer (a first-byte or attempt timeout, the
	// budget, an unresponsive backend) to move on: the backend may still
	// complete it and bill it, though nobody reads the answer.
	Abandoned bool
	// Start is when the attempt began; Duration runs until its headers or
	// its error.
	Start    time.Time
	Duration time.Duration
	// Hedge is true for a hedge: the second attempt of a request, sent
	// while the first was still waiting for its first byte (see Hedge).
	Hedge bool
}

// Report describes how the engine handled one request.
type Report struct {
	Pool     string
	Attempts []Attempt
	// Served is the member whose response was returned, nil when none was.
	Served *Member
	// Failover is true when an earlier attempt failed or the answer came
	// from a lower priority tier than the pool's first.
	Failover bool
	// FailoverFrom and FailoverReason say what was failed over from.
	FailoverFrom   string
	FailoverReason Reason
	// Skipped lists members passed over because they cannot honour the
	// request (a feature their provider lacks).
	Skipped []Skip
	// BudgetSpent is true when the pool's TryDuration ran out before an
	// attempt could answer.
	BudgetSpent bool
	// OutOfQuota lists the backends passed over because their Quota said
	// the call would not fit, with when each window resets.
	OutOfQuota []QuotaHold
	// Waited is how long the request waited in the pool's queue for quota
	// (Request.MaxWait); zero when it did not.
	Waited time.Duration
	// rateLimited and retryAt say the pool answered 429
	// backends_rate_limited, and when a member will take calls again.
	rateLimited bool
	retryAt     time.Time
	// RetryBudgetSpent is true when a retry was refused by the pool's
	// RetryBudget: the request was answered with its last failure.
	RetryBudgetSpent bool
	// FallbackFrom is the name of the pool this request fell back from
	// to Pool (its Fallback or ContextFallback), and FallbackCause why;
	// empty when the request stayed in the pool it was sent to. Prior is
	// that pool's report (with a Prior of its own along a chain of
	// fallbacks), nil when there was none.
	FallbackFrom  string
	FallbackCause FallbackCause
	Prior         *Report
	// Hedge says which attempt answered a hedged request; empty when no
	// hedge was sent.
	Hedge HedgeResult
	// Usage is what the answer passed on says it used, once known: at
	// once for a plain answer, at the end of its body for a stream (read
	// it after the body is read). Nil when no backend answered.
	Usage *Usage

	first [1]Attempt // Attempts' first backing array: most requests make one
	// headerVals backs the values of the headers served sets on the
	// answer (HeaderBackend and the rest): one allocation fewer a request.
	headerVals [5]string
	op         Operation // the request's, for judging a failover (served)
}

// QuotaHold is a backend passed over for a request because its quota
// would refuse the call, until its window resets.
type QuotaHold struct {
	Backend string
	Until   time.Time
}

// Skip is a member passed over for a request, and why.
type Skip struct {
	Backend string
	Reason  string
}
