package route

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// A failing status is judged at the scope it speaks of. A backend is
// configured for chat: the operation its health probe calls (ProbeChat,
// a chat completion, or Anthropic's messages, in the backend's own
// format). A 401 says its key is refused, and a 403 or 404 on chat that
// its key or its deployment is wrong: the backend is misconfigured and
// benched, for every operation (misconfigured). Any other operation
// (embeddings, completions, the Responses API, audio, images,
// moderations, count_tokens, a Realtime session) may simply not be
// deployed there: a 403, 404 or 405 on it, or a 400 whose code says the
// operation is not supported (Azure's OperationNotSupported), says only
// that this member does not serve that operation. The member is then
// marked as lacking it for UnsupportedHold, the call fails over to the
// members that may serve it, and the breaker hears nothing: no caller can
// bench a backend for everyone else by asking it for what it does not
// serve. When no member serves the operation, the pool answers 404
// operation_not_supported, naming it.
//
// Which operation a call is counts as sent: a call translated into chat
// for its backend (an Anthropic client's messages to Azure, a Responses
// call to a backend without the Responses API) is a chat call.

// ReasonOperationUnsupported: the member answered that it does not serve
// the request's operation (a 403, 404 or 405 for an operation other than
// chat, or Azure's 400 OperationNotSupported), or was passed over because
// it had so answered within UnsupportedHold. The backend is not benched:
// the request fails over to the members that serve the operation.
const ReasonOperationUnsupported Reason = "operation_unsupported"

// UnsupportedHold is how long a member that answered that it does not
// serve an operation is passed over for that operation (and that one
// only), without a call: one call per member and operation per hold finds
// out whether it has been deployed since.
const UnsupportedHold = time.Minute

// opSlot is op's place in a member's marks (see opMarks), -1 for an
// operation the engine does not route. The set is fixed: a caller's
// strings never become keys, so the marks cannot grow.
func (op Operation) opSlot() int {
	switch op {
	case ChatCompletions:
		return 0
	case Completions:
		return 1
	case Embeddings:
		return 2
	case Messages:
		return 3
	case Responses:
		return 4
	case CountTokens:
		return 5
	case AudioTranscriptions:
		return 6
	case AudioTranslations:
		return 7
	case AudioSpeech:
		return 8
	case ImagesGenerations:
		return 9
	case ImagesEdits:
		return 10
	case ImagesVariations:
		return 11
	case Moderations:
		return 12
	case Realtime:
		return 13
	case ResponsesCompact:
		return 14
	case GeminiCountTokens:
		return 15
	}
	return -1
}

// numOpSlots is how many operations opSlot places.
const numOpSlots = 16

// opMarks are the operations a member was found not to serve: for each
// slot, when the mark ends (Unix nanoseconds on the pool's clock; zero
// when none). Safe for concurrent use.
type opMarks struct {
	until [numOpSlots]atomic.Int64
}

// lacks reports whether m is marked as not serving op at now.
func (m *Member) lacks(op Operation, now time.Time) bool {
	marks := m.ops.Load()
	if marks == nil {
		return false // the usual case: no mark was ever made
	}
	s := op.opSlot()
	return s >= 0 && now.UnixNano() < marks.until[s].Load()
}

// markUnsupported marks m as not serving op from now for UnsupportedHold,
// and reports whether the mark is new (m was not marked for op already).
func (m *Member) markUnsupported(op Operation, now time.Time) bool {
	s := op.opSlot()
	if s < 0 {
		return false
	}
	marks := m.ops.Load()
	if marks == nil {
		m.ops.CompareAndSwap(nil, new(opMarks))
		marks = m.ops.Load()
	}
	until := now.Add(UnsupportedHold).UnixNano()
	for {
		old := marks.until[s].Load()
		if now.UnixNano() < old {
			return false
		}
		if marks.until[s].CompareAndSwap(old, until) {
			return true
		}
	}
}

// markedUntil is when m's mark for op ends; zero when it has none.
func (m *Member) markedUntil(op Operation) time.Time {
	marks, s := m.ops.Load(), op.opSlot()
	if marks == nil || s < 0 {
		return time.Time{}
	}
	if n := marks.until[s].Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// opScope is what a failing status says is broken.
type opScope uint8

const (
	// scopeOther: no scope of its own; the usual handling (retry, count,
	// pass on).
	scopeOther opScope = iota
	// scopeBackend: the backend's credential or configured deployment is
	// broken: misconfigured, benched.
	scopeBackend
	// scopeOperation: the member does not serve the operation: marked,
	// failed over, never benched.
	scopeOperation
)

// unknownModelCode is the code of Azure AI Foundry's 400 for a model the
// resource has no deployment of: its 404 DeploymentNotFound, judged as
// Azure's is (the backend on chat, the operation otherwise).
const unknownModelCode = "unknown_model"

// opNotSupportedCodes are the error codes (Azure's) of a 400 that says
// the deployment does not serve the operation.
var opNotSupportedCodes = []string{"OperationNotSupported", "DeploymentNotFound"}

// statusScope judges a failing status of the attempt, whose error body
// carries code (translate.ErrorCode).
func (at *attempt) statusScope(status int, code string) opScope {
	r := at.r
	if r.Path != "" || r.Owner != "" {
		// A call on state that one backend holds: a 404 says the state
		// is gone (the caller's answer, passed on); a 401 or 403 is the
		// backend's key.
		if status == http.StatusNotFound {
			return scopeOther
		}
		if misconfigured(status) {
			return scopeBackend
		}
		return scopeOther
	}
	switch {
	case status == http.StatusUnauthorized:
		return scopeBackend // the key is refused, whatever the operation
	case status == http.StatusForbidden, status == http.StatusNotFound,
		status == http.StatusBadRequest && code == unknownModelCode:
		if at.o.Op.IsChat() {
			return scopeBackend // the configured deployment
		}
		return scopeOperation
	case status == http.StatusMethodNotAllowed, status == http.StatusBadRequest && opNotSupported(code):
		if at.o.Op.IsChat() {
			return scopeOther
		}
		return scopeOperation
	}
	return scopeOther
}

func opNotSupported(code string) bool {
	for _, c := range opNotSupportedCodes {
		if code == c {
			return true
		}
	}
	return false
}

// unsupportedOperation ends an attempt whose member answered that it does
// not serve the request's operation: the breaker hears nothing, the member
// is marked for the operation (the observer told when the mark is new),
// and the request fails over.
func (at *attempt) unsupportedOperation(resp *http.Response, errBody []byte, a *Attempt) (*http.Response, Attempt, error) {
	p, b, r := at.p, at.b, at.r
	at.record(breaker.Outcome{Result: breaker.Ignore})
	a.Reason, a.Retryable, a.RetryAfter = ReasonOperationUnsupported, true, 0
	a.Message = b.redact(errorMessage(errBody))
	if at.m != nil && at.m.markUnsupported(r.Op, at.clk.Now()) {
		seen := *a // a copy, so that a itself can stay on try's stack
		p.observe(Event{Kind: EventOperationUnsupported, Backend: b, Attempt: &seen, Reason: ReasonOperationUnsupported, Op: r.Op})
	}
	resp.Body.Close()
	at.release()
	return resp, *a, nil
}

// skipsUnsupported reports whether m is passed over for r at now because
// it was found not to serve r's operation. A call on state one backend
// holds always goes to that backend.
func (m *Member) skipsUnsupported(r *Request, now time.Time) bool {
	return r != nil && r.Owner == "" && r.Path == "" && m.lacks(r.Op, now)
}

// servesNone reports whether no member of the pool serves r's operation:
// each one is marked as lacking it, or was skipped for r (it cannot
// honour the request at all), and at least one is marked.
func (p *Pool) servesNone(r *Request, rep *Report) bool {
	if r.Owner != "" || r.Path != "" || len(p.Members) == 0 {
		return false
	}
	now, marked := p.now(), false
	for _, m := range p.Members {
		switch {
		case m.lacks(r.Op, now):
			marked = true
		case !rep.skipped(m.Backend.Name):
			return false
		}
	}
	return marked
}

// skipped reports whether the backend named name was skipped for the
// request (Report.Skipped).
func (rep *Report) skipped(name string) bool {
	for _, s := range rep.Skipped {
		if s.Backend == name {
			return true
		}
	}
	return false
}

// operationUnsupported is the pool's answer when no member serves r's
// operation (servesNone): 404 operation_not_supported, in the client's
// format, naming the operation and saying what each member answered.
// No wait helps, so it carries no Retry-After.
func (p *Pool) operationUnsupported(r *Request, rep *Report) *http.Response {
	now := p.now()
	var parts []string
	for _, m := range p.Members {
		name := m.Backend.Name
		switch a := rep.attemptOf(name); {
		case a != nil:
			parts = append(parts, name+": answered "+a.describe()+": "+a.Message)
		case m.lacks(r.Op, now):
			until := m.markedUntil(r.Op)
			parts = append(parts, fmt.Sprintf("%s: found not to serve it %s ago, asked again in %s", name,
				now.Sub(until.Add(-UnsupportedHold)).Round(time.Second), until.Sub(now).Round(time.Second)))
		default:
			parts = append(parts, name+": cannot honour this request")
		}
	}
	msg := fmt.Sprintf("switchover: no backend of pool %q serves %s (%s)", p.Name, r.Op, strings.Join(parts, "; "))
	const status = http.StatusNotFound
	body := exhaustedBody(r, rep, status, "operation_not_supported", msg)
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set(HeaderAttempts, itoa(len(rep.Attempts)))
	h.Set(HeaderFailover, "false")
	return newResponse(status, h, body)
}

// attemptOf is the last attempt of the request on the backend named name,
// nil when there is none.
func (rep *Report) attemptOf(name string) *Attempt {
	for i := len(rep.Attempts) - 1; i >= 0; i-- {
		if rep.Attempts[i].Backend == name {
			return &rep.Attempts[i]
		}
	}
	return nil
}

// judged is rep's attempts from the first that did not find its member
// lacking the operation: an answer that the member does not serve it says
// which members serve the operation, not that one failed, so it makes no
// failover.
func (rep *Report) judged() []Attempt {
	for i, a := range rep.Attempts {
		if a.Reason != ReasonOperationUnsupported {
			return rep.Attempts[i:]
		}
	}
	return nil
}

// topServing is the first member, in configuration order, of the best
// priority tier among the members not marked as lacking op: the member a
// request for op goes to with every backend healthy.
func (p *Pool) topServing(op Operation) *Member {
	var now time.Time // read only when a member has marks
	// The tiers best first, each in configuration order.
	for _, tier := range p.tiers.of(p.Members) {
		for _, i := range tier {
			m := p.Members[i]
			if m.ops.Load() != nil {
				if now.IsZero() {
					now = p.now()
				}
				if m.lacks(op, now) {
					continue
				}
			}
			return m
		}
	}
	return nil
}
