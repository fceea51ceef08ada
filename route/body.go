package route

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/translate"
)

// prefixSize is how much of a response is kept to find the model version
// it names, which OpenAI, Azure and Anthropic put near the start.
const prefixSize = 2 << 10

// BodyError is returned by a response body that failed after its headers
// were returned: a stream that broke, stalled or timed out mid-way.
type BodyError struct {
	Backend string
	Reason  Reason
	Err     error
	// Reported is true when the client has already been told in-band: the
	// backend's own error event, translated, is in the stream.
	Reported bool
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
	// onModel, if set, gets the first bytes of a body that ended cleanly,
	// to read the model version the backend answered with.
	onModel func(prefix []byte)
	backend string

	prefix []byte // up to prefixSize bytes from the start of the body

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
	if b.onModel != nil && len(b.prefix) < prefixSize && n > 0 {
		b.prefix = append(b.prefix, p[:min(n, prefixSize-len(b.prefix))]...)
	}
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		b.finish(breaker.Outcome{Result: breaker.Success}, nil)
		if b.onModel != nil {
			b.onModel(b.prefix)
		}
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

// translatedBody is a response body translated from the backend's format
// to the client's. A stream that the backend ended with its own error
// event, or cut short without finishing its answer, is the backend's
// failure, although the connection ended cleanly.
type translatedBody struct {
	io.ReadCloser
	raw *body
}

func (t *translatedBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if err == nil || err == io.EOF {
		return n, err
	}
	var be *BodyError
	if errors.As(err, &be) {
		return n, err // the raw body failed and has told the breaker
	}
	var se *translate.StreamError
	reported := errors.As(err, &se)
	if !reported && !errors.Is(err, translate.ErrTruncated) {
		return n, err
	}
	berr := &BodyError{Backend: t.raw.backend, Reason: ReasonStreamError, Err: err, Reported: reported}
	t.raw.finish(breaker.Outcome{Result: breaker.Failure, Cause: "stream error"}, berr)
	return n, berr
}
