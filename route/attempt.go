package route

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// try makes one attempt on member m, whose breaker has let it through with
// done. It returns the response to pass on (its body wrapped so that the
// breaker learns how the body ended), or for a retryable failure the
// response with its body already closed (nil for transport errors). err is
// non-nil only when the client went away or the request could not be built.
func (p *Pool) try(ctx context.Context, r *Request, m *Member, done breaker.Done) (*http.Response, Attempt, error) {
	b := m.Backend
	began := time.Now()
	a := Attempt{Backend: b.Name, Region: b.Region, Priority: m.priority(), Start: p.now()}
	model := m.Model
	if model == "" {
		model = r.Model
	}

	actx, cancel := context.WithCancelCause(ctx)
	var timeout, firstByte *time.Timer
	if b.Timeout > 0 {
		timeout = time.AfterFunc(b.Timeout, func() { cancel(errAttemptTimeout) })
	}
	if d := b.firstByteTimeout(r.Stream); d > 0 {
		firstByte = time.AfterFunc(d, func() { cancel(errFirstByteTimeout) })
	}
	release := func() {
		if firstByte != nil {
			firstByte.Stop()
		}
		if timeout != nil {
			timeout.Stop()
		}
		cancel(context.Canceled)
	}

	req, err := b.Provider.NewRequest(actx, r, model)
	if err != nil {
		release()
		done(breaker.Outcome{Result: breaker.Ignore})
		a.Reason, a.Message = ReasonConnect, err.Error()
		return nil, a, fmt.Errorf("switchover: backend %s: building request: %w", b.Name, err)
	}
	resp, err := b.transport().RoundTrip(req)
	var rd io.Reader
	if err == nil {
		rd = resp.Body
		if resp.StatusCode == http.StatusOK && isEventStream(resp.Header) {
			// A stream's first byte is the first event, not the headers:
			// wait for it under the first-byte timeout, so a backend that
			// sends headers and then nothing can still be failed over.
			br := bufio.NewReader(resp.Body)
			if _, perr := br.Peek(1); perr != nil {
				resp.Body.Close()
				resp, err = nil, perr
				if perr == io.EOF {
					err = io.ErrUnexpectedEOF
				}
			}
			rd = br
		}
	}
	if firstByte != nil {
		firstByte.Stop()
	}
	a.Duration = time.Since(began)

	if err != nil {
		reason := errReason(ctx, actx, err)
		release()
		if reason == ReasonCanceled {
			done(breaker.Outcome{Result: breaker.Ignore})
			a.Reason = ReasonCanceled
			return nil, a, context.Cause(ctx)
		}
		a.Reason, a.Retryable, a.Message = reason, true, err.Error()
		done(breaker.Outcome{Result: breaker.Failure, Cause: string(reason)})
		return nil, a, nil
	}

	a.Status = resp.StatusCode
	retry, counts := p.retries(resp.StatusCode), b.counts(resp.StatusCode)
	if retry || counts {
		a.RetryAfter = RetryAfter(resp.Header, a.Start)
		a.Reason = statusReason(resp.StatusCode)
		if counts {
			done(breaker.Outcome{Result: breaker.Failure, RetryAfter: a.RetryAfter, Cause: strconv.Itoa(resp.StatusCode)})
		} else {
			done(breaker.Outcome{Result: breaker.Success})
		}
		done = nil
	}
	if retry {
		a.Retryable = true
		a.Message = errorMessage(resp.Body)
		resp.Body.Close()
		release()
		return resp, a, nil
	}
	if !counts {
		a.Reason = ReasonOK
	}
	resp.Body = (&body{
		rc:      resp.Body,
		r:       rd,
		done:    done,
		release: release,
		cctx:    ctx,
		actx:    actx,
		idle:    b.IdleTimeout,
		cancel:  cancel,
		onError: func(err error) { p.observe(Event{Kind: EventBodyError, Backend: b, Err: err}) },
		backend: b.Name,
	}).start()
	return resp, a, nil
}

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// errorMessage reads the start of an error body and returns its OpenAI-
// style error.message, or the raw text when it is not that shape.
func errorMessage(rc io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(rc, 8<<10))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil {
		if e.Error.Message != "" {
			return e.Error.Message
		}
		if e.Message != "" {
			return e.Message
		}
	}
	const max = 300
	if len(b) > max {
		b = b[:max]
	}
	return string(b)
}
