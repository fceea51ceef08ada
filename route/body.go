package route

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// BodyError is returned by a response body that failed after its headers
// were returned: a stream that broke, stalled or timed out mid-way.
type BodyError struct {
	Backend string
	Reason  Reason
	Err     error
}

func (e *BodyError) Error() string {
	return fmt.Sprintf("switchover: backend %s: response body: %s: %v", e.Backend, e.Reason, e.Err)
}

func (e *BodyError) Unwrap() error { return e.Err }

// body wraps an upstream response body. When the body ends it tells the
// breaker how (EOF is a success, a read error a failure, the client going
// away or closing early says nothing), and it ends the attempt's context
// when closed, not when the attempt returned: cancelling earlier would cut
// the body off.
type body struct {
	rc      io.ReadCloser // the upstream body, for Close
	r       io.Reader     // what to read: rc, or a buffered reader over it
	done    breaker.Done  // nil when the outcome is already recorded
	release func()        // stops the attempt's timers and cancels actx
	cancel  context.CancelCauseFunc
	cctx    context.Context // the client's
	actx    context.Context // the attempt's
	idle    time.Duration
	onError func(error)
	backend string

	idleTimer *time.Timer // set by newBody when idle > 0
	once      sync.Once
}

// start arms the idle timer, if any. Call before handing the body out.
func (b *body) start() *body {
	if b.idle > 0 {
		b.idleTimer = time.AfterFunc(b.idle, func() { b.cancel(errIdleTimeout) })
	}
	return b
}

func (b *body) Read(p []byte) (int, error) {
	if b.idleTimer != nil {
		b.idleTimer.Reset(b.idle)
	}
	n, err := b.r.Read(p)
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		b.finish(breaker.Outcome{Result: breaker.Success}, nil)
		return n, err
	}
	reason := errReason(b.cctx, b.actx, err)
	if reason == ReasonCanceled {
		b.finish(breaker.Outcome{Result: breaker.Ignore}, nil)
		return n, err
	}
	berr := &BodyError{Backend: b.backend, Reason: reason, Err: err}
	b.finish(breaker.Outcome{Result: breaker.Failure, Cause: "body " + string(reason)}, berr)
	return n, berr
}

func (b *body) Close() error {
	b.finish(breaker.Outcome{Result: breaker.Ignore}, nil)
	return b.rc.Close()
}

func (b *body) finish(o breaker.Outcome, err error) {
	b.once.Do(func() {
		if b.idleTimer != nil {
			b.idleTimer.Stop()
		}
		if b.done != nil {
			b.done(o)
		}
		b.release()
		if err != nil && b.onError != nil {
			b.onError(err)
		}
	})
}
