package route

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Quota is what a backend has said of its rate limits, and the admission
// of calls against it: a call that would be refused is not sent, so no
// refused call is spent finding out. The engine asks Fits of each
// candidate, Admit of the one it picks, and gives Observe the status and
// headers of every answer (429s included). An implementation may be
// shared by several replicas (a store they all read); it must be safe for
// concurrent use.
type Quota interface {
	// Fits reports whether a call of cost c fits what the backend has
	// left at now, without reserving anything; when it does not, until is
	// when the backend's window resets.
	Fits(now time.Time, c Cost) (ok bool, until time.Time)
	// Admit is Fits that also reserves the call until release is called
	// (once the backend has answered, and so counted it itself).
	Admit(now time.Time, c Cost) (release func(), ok bool, until time.Time)
	// Observe records the status and rate-limit headers of an answer
	// received at now to a call sent at sent: the backend's figures count
	// the calls it had taken by then, not those sent after.
	Observe(now, sent time.Time, status int, h http.Header)
}

// Cost is the size of a call for quota admission. *Request implements it;
// Tokens is computed once, and only when a window of tokens is known.
type Cost interface {
	Tokens() int64
}

// DefaultQuotaSlice is how long a LocalQuota waits for a backend's window
// to reset when the backend says how much it has left but not when it
// refills (Azure OpenAI sends no reset headers; it enforces its
// per-minute limits over slices of 1 or 10 seconds).
const DefaultQuotaSlice = 10 * time.Second

// LocalQuota is a Quota held in this process. It reads:
//
//   - x-ratelimit-remaining-requests and -tokens, with -limit-* and, from
//     OpenAI and Groq, -reset-* ("1s", "6m0s", "20ms", "2m59.56s"), or
//     bare x-ratelimit-remaining, -limit and -reset for requests
//     (Together, OpenRouter; see parseReset);
//   - anthropic-ratelimit-requests-, -tokens-, -input-tokens- and
//     -output-tokens- -remaining and -reset (RFC 3339 times);
//   - Retry-After on a 429: nothing is left until it ends.
//
// What is left is what the last answer said, less the calls admitted
// after the call that answer was for was sent (the backend had not
// counted those yet): under concurrency the calls in flight cannot all
// take the last slot, and none is counted twice. A backend that names no
// reset (Azure) is taken to refill every Slice, from the start of its
// window as last seen: the first answer after a refill. A window whose
// reset has passed, or that was never seen, admits everything. The zero
// value is ready to use. It is safe for concurrent use.
type LocalQuota struct {
	// Slice is the length of a window whose backend names no reset. Zero
	// means DefaultQuotaSlice.
	Slice time.Duration

	mu       sync.Mutex
	requests window
	tokens   window
	res      []reservation // admitted, not yet answered
	seq      uint64        // the last reservation's id
}

var _ Quota = (*LocalQuota)(nil)

// window is one limit's state. Requires external locking.
type window struct {
	known     bool
	remaining int64     // as the backend last said
	limit     int64     // per minute; 0 unknown
	reset     time.Time // when it refills
	asOf      time.Time // when the call the backend's figure answered was sent
	seenAt    time.Time // when that answer came back
	start     time.Time // a windowed backend's window start, as last seen; zero unknown
	peak      int64     // the most it has said it had left: a fresh window's size, at least
}

// reorderSlack is how far apart two calls may be sent and still reach the
// backend in the other order (separate connections): a figure may not
// count the calls sent this long before its own. For a windowed backend
// it is at most a fortieth of the window, so that a short window (a
// compressed game day's) is not held for calls it has counted.
const reorderSlack = 50 * time.Millisecond

// set records reading r of the answer, received at now, to a call sent at
// sent.
func (w *window) set(r rateReading, sent, now time.Time, slice time.Duration) {
	if r.limit > 0 {
		w.limit = r.limit
	}
	if r.hasReset {
		if w.known && sent.Before(w.asOf) && !r.reset.After(w.reset) {
			// The answer to a call sent before the one last heard of,
			// come back later: its figure is older, and higher.
			return
		}
		w.record(r.remaining, r.reset, sent, now)
		return
	}
	// No reset named: the window refills every slice from its start.
	// Within one window the figure only falls, whatever order the calls
	// reached the backend in; a higher one is a new window only if its
	// call was sent after the lower figure came back (it reached the
	// backend after the call that figure counted).
	switch {
	case !w.known || w.start.IsZero():
		w.start = sent
	case !sent.Before(w.start.Add(slice)):
		// A later window: the same phase, whole slices on.
		w.start = w.start.Add(sent.Sub(w.start) / slice * slice)
	case sent.Before(w.start):
		return // from a window already over
	case r.remaining > w.remaining && sent.After(w.seenAt):
		// A refill within the slice as known: the window's start was
		// learned late.
		w.start = sent
	case r.remaining > w.remaining:
		return // the same window, counted before the lower figure
	}
	w.record(r.remaining, w.start.Add(slice), sent, now)
}

func (w *window) record(remaining int64, reset, sent, now time.Time) {
	w.known, w.remaining, w.reset, w.asOf, w.seenAt = true, remaining, reset, sent, now
	w.peak = max(w.peak, remaining)
}

// left is what q's window w has left at now for the measure of, and
// whether it is known. Requires q.mu held.
func (q *LocalQuota) left(w *window, now time.Time, of func(*reservation) int64) (int64, bool) {
	if !w.known {
		return 0, false
	}
	n, asOf := w.remaining, w.asOf
	if !now.Before(w.reset) {
		// A new window, not yet heard of: it holds no more than the most
		// the backend ever said it had (one call, if it only ever said it
		// had none), so the calls sent before its first answer comes back
		// cannot overrun it.
		n, asOf = max(w.peak, 1), w.reset
	}
	slack := reorderSlack
	if !w.start.IsZero() {
		slack = min(slack, q.slice()/40)
	}
	asOf = asOf.Add(-slack)
	for i := range q.res {
		if r := &q.res[i]; !r.at.Before(asOf) {
			n -= of(r)
		}
	}
	return n, true
}

func oneCall(*reservation) int64     { return 1 }
func itsTokens(r *reservation) int64 { return r.tokens }

// Fits implements Quota.
func (q *LocalQuota) Fits(now time.Time, c Cost) (bool, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.fits(now, c)
}

// fits is Fits. Requires q.mu held.
func (q *LocalQuota) fits(now time.Time, c Cost) (bool, time.Time) {
	if left, ok := q.left(&q.requests, now, oneCall); ok && left < 1 {
		return false, q.requests.reset
	}
	if left, ok := q.left(&q.tokens, now, itsTokens); ok {
		// A call larger than the whole limit never fits; that is for the
		// backend's own 429 to say (tokens_exceed_limit), not a wait.
		if t := c.Tokens(); t > left && (q.tokens.limit <= 0 || t <= q.tokens.limit) {
			return false, q.tokens.reset
		}
	}
	return true, time.Time{}
}

// Admit implements Quota.
func (q *LocalQuota) Admit(now time.Time, c Cost) (func(), bool, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ok, until := q.fits(now, c); !ok {
		return nil, false, until
	}
	q.seq++
	r := reservation{id: q.seq, at: now}
	if q.tokens.known {
		r.tokens = c.Tokens()
	}
	q.res = append(q.res, r)
	id := r.id
	// The release is the one allocation: the reservation is kept by
	// value, found again by its id.
	return func() { q.release(id) }, true, time.Time{}
}

// reservation is one admitted call, until the backend has answered it.
type reservation struct {
	id     uint64
	at     time.Time
	tokens int64
}

// release ends reservation id; a second release of it does nothing.
func (q *LocalQuota) release(id uint64) {
	q.mu.Lock()
	for i := range q.res {
		if q.res[i].id == id {
			q.res = append(q.res[:i], q.res[i+1:]...)
			break
		}
	}
	q.mu.Unlock()
}

// slice is q.Slice or its default.
func (q *LocalQuota) slice() time.Duration {
	if q.Slice <= 0 {
		return DefaultQuotaSlice
	}
	return q.Slice
}

// Observe implements Quota.
func (q *LocalQuota) Observe(now, sent time.Time, status int, h http.Header) {
	slice := q.slice()
	if sent.IsZero() || sent.After(now) {
		sent = now
	}
	req, tok, seen := readRateHeaders(h, now)
	ra := time.Duration(0)
	if status == http.StatusTooManyRequests {
		ra = RetryAfter(h, now)
	}
	if !seen && ra <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if req.known {
		q.requests.set(req, sent, now, slice)
	}
	if tok.known {
		q.tokens.set(tok, sent, now, slice)
	}
	if ra > 0 {
		// Refused: nothing is left until the backend's Retry-After ends.
		until := now.Add(min(ra, maxRetryAfter))
		w := &q.requests
		w.record(0, until, now, now)
		if !req.hasReset && ra <= slice {
			// A windowed backend's Retry-After is the time to its next
			// slice: the windows' phase, exactly.
			w.start = until.Add(-slice)
		}
	}
}

// Forget drops what the backend has said of its remaining quota (what is
// left, when it refills, a 429's Retry-After), keeping the limits: the
// next call is sent, and its answer says again. It returns when the hold
// it lifted would have ended, zero when no call was being held at now.
// For an operator who forces the backend's breaker closed: a Retry-After
// of minutes would otherwise keep every call from being sent after the
// breaker lets them through. Calls in flight stay reserved.
func (q *LocalQuota) Forget(now time.Time) (held time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if left, ok := q.left(&q.requests, now, oneCall); ok && left < 1 {
		held = q.requests.reset
	}
	if left, ok := q.left(&q.tokens, now, itsTokens); ok && left < 1 && q.tokens.reset.After(held) {
		held = q.tokens.reset
	}
	q.requests = window{limit: q.requests.limit}
	q.tokens = window{limit: q.tokens.limit}
	return held
}

// QuotaSnapshot is what a LocalQuota holds: what is left of each limit (less
// the calls in flight), the limits, and when the windows reset; Known
// false for a limit never seen or whose window has reset.
type QuotaSnapshot struct {
	RequestsKnown, TokensKnown bool
	Requests, Tokens           int64
	RequestLimit, TokenLimit   int64
	RequestsReset, TokensReset time.Time
}

// Snapshot returns the state at now.
func (q *LocalQuota) Snapshot(now time.Time) QuotaSnapshot {
	q.mu.Lock()
	defer q.mu.Unlock()
	var s QuotaSnapshot
	s.Requests, s.RequestsKnown = q.left(&q.requests, now, oneCall)
	s.Tokens, s.TokensKnown = q.left(&q.tokens, now, itsTokens)
	s.RequestLimit, s.TokenLimit = q.requests.limit, q.tokens.limit
	s.RequestsReset, s.TokensReset = q.requests.reset, q.tokens.reset
	return s
}

// Headroom is the share of its limits a backend has left at now (the
// smaller of requests and tokens), and whether any is known: for the
// headroom strategy, the status and the console. What is left is compared
// with what the same window holds when full (window.size): for a backend
// that names no reset (Azure), the slice's share of its per-minute limit,
// not the whole limit, so an idle backend reads full, not a sixth. A
// window whose reset has passed is full, less the calls sent since.
func (q *LocalQuota) Headroom(now time.Time) (float64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	share, known := 1.0, false
	if s, ok := q.share(&q.requests, now, oneCall); ok {
		share, known = min(share, s), true
	}
	if s, ok := q.share(&q.tokens, now, itsTokens); ok {
		share, known = min(share, s), true
	}
	return max(share, 0), known
}

// share is the share of w's size left at now, for the measure of, and
// whether it is known. Requires q.mu held.
func (q *LocalQuota) share(w *window, now time.Time, of func(*reservation) int64) (float64, bool) {
	size := w.size(q.slice())
	left, ok := q.left(w, now, of)
	if !ok || size <= 0 {
		return 0, false
	}
	if !now.Before(w.reset) {
		// left counts a fresh window as the most it was ever seen to
		// hold (for admission, cautious); here it is full.
		left += size - max(w.peak, 1)
	}
	return float64(left) / float64(size), true
}

// size is how much w holds when full, zero when its limit is unknown. A
// backend that names its reset (OpenAI, Anthropic) counts what is left
// against its limit itself. One that does not (Azure) counts a slice at a
// time: its figures are what is left of the slice's share of the
// per-minute limit (a sixth for a 10-second slice), or of the most it was
// ever seen to hold (the most it said it had left, and the call that
// answer counted), if that is more. Requires external locking.
func (w *window) size(slice time.Duration) int64 {
	if w.limit <= 0 {
		return 0
	}
	if w.start.IsZero() {
		return w.limit
	}
	ms, minute := slice.Milliseconds(), time.Minute.Milliseconds()
	n := min(w.limit, (w.limit*ms+minute-1)/minute) // rounded up
	return max(n, w.peak+1)
}

// parseReset reads an x-ratelimit-reset value: a duration ("1s", "6m0s",
// Groq's "2m59.56s"), a number of seconds (Together's "1", "0.5"), or an
// instant in Unix milliseconds (OpenRouter's) or seconds. It is capped at
// maxRetryAfter from now; a reset that has passed is none.
func parseReset(v string, now time.Time) (time.Time, bool) {
	var d time.Duration
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case f > 1e12: // Unix milliseconds
			d = time.UnixMilli(int64(f)).Sub(now)
		case f > 1e9: // Unix seconds
			d = time.Unix(int64(f), 0).Sub(now)
		default:
			d = time.Duration(f * float64(time.Second))
		}
	} else if d, err = time.ParseDuration(v); err != nil {
		return time.Time{}, false
	}
	if d <= 0 {
		return time.Time{}, false
	}
	return now.Add(min(d, maxRetryAfter)), true
}

// rateReading is one limit as a response's headers state it.
type rateReading struct {
	known, hasReset  bool
	remaining, limit int64
	reset            time.Time
}

// readRateHeaders reads the request and token limits from h (OpenAI and
// Azure, or Anthropic's).
func readRateHeaders(h http.Header, now time.Time) (req, tok rateReading, seen bool) {
	read := func(remaining, limit, reset string, anthropic bool) rateReading {
		v := strings.TrimSpace(h.Get(remaining))
		if v == "" {
			return rateReading{}
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return rateReading{}
		}
		r := rateReading{known: true, remaining: n}
		if lv := strings.TrimSpace(h.Get(limit)); lv != "" { // ParseInt's error for "" is an allocation
			if l, err := strconv.ParseInt(lv, 10, 64); err == nil && l > 0 {
				r.limit = l
			}
		}
		if rv := strings.TrimSpace(h.Get(reset)); rv != "" {
			if anthropic {
				if t, err := time.Parse(time.RFC3339, rv); err == nil && t.After(now) {
					r.reset, r.hasReset = t, true
				}
			} else if at, ok := parseReset(rv, now); ok {
				r.reset, r.hasReset = at, true
			}
		}
		return r
	}
	req = read("X-Ratelimit-Remaining-Requests", "X-Ratelimit-Limit-Requests", "X-Ratelimit-Reset-Requests", false)
	tok = read("X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Reset-Tokens", false)
	if !req.known {
		req = read("Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Reset", true)
	}
	if !req.known {
		// Together's and OpenRouter's: the requests limit without a
		// suffix.
		req = read("X-Ratelimit-Remaining", "X-Ratelimit-Limit", "X-Ratelimit-Reset", false)
	}
	if !tok.known {
		tok = read("Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Reset", true)
	}
	if !tok.known {
		// Anthropic's newer split limits: the input tokens are the ones a
		// request's estimate is mostly made of.
		tok = read("Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Reset", true)
	}
	return req, tok, req.known || tok.known
}
