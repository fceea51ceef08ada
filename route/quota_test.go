package route_test

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/route"
)

type cost int64

func (c cost) Tokens() int64 { return int64(c) }

var qt0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestLocalQuotaReadsEachProvidersHeaders(t *testing.T) {
	tests := []struct {
		name          string
		h             http.Header
		wantReq       int64
		wantTok       int64
		reqReset      time.Duration
		tokReset      time.Duration
		reqLim, tokLm int64
	}{
		{"openai, with resets", http.Header{
			"X-Ratelimit-Limit-Requests": {"60"}, "X-Ratelimit-Remaining-Requests": {"7"}, "X-Ratelimit-Reset-Requests": {"1.5s"},
			"X-Ratelimit-Limit-Tokens": {"90000"}, "X-Ratelimit-Remaining-Tokens": {"1200"}, "X-Ratelimit-Reset-Tokens": {"6m0s"},
		}, 7, 1200, 1500 * time.Millisecond, 6 * time.Minute, 60, 90000},
		{"groq: resets such as 2m59.56s", http.Header{
			"X-Ratelimit-Limit-Requests": {"14400"}, "X-Ratelimit-Remaining-Requests": {"14370"}, "X-Ratelimit-Reset-Requests": {"2m59.56s"},
			"X-Ratelimit-Limit-Tokens": {"18000"}, "X-Ratelimit-Remaining-Tokens": {"17997"}, "X-Ratelimit-Reset-Tokens": {"7.66s"},
		}, 14370, 17997, 2*time.Minute + 59560*time.Millisecond, 7660 * time.Millisecond, 14400, 18000},
		{"together: bare requests headers, reset in seconds", http.Header{
			"X-Ratelimit-Limit": {"10"}, "X-Ratelimit-Remaining": {"9"}, "X-Ratelimit-Reset": {"1"},
			"X-Ratelimit-Limit-Tokens": {"2000"}, "X-Ratelimit-Remaining-Tokens": {"1800"},
		}, 9, 1800, time.Second, route.DefaultQuotaSlice, 10, 2000},
		{"azure: no reset, the default slice", http.Header{
			"X-Ratelimit-Remaining-Requests": {"3"}, "X-Ratelimit-Remaining-Tokens": {"500"}, "X-Ratelimit-Limit-Tokens": {"6000"},
		}, 3, 500, route.DefaultQuotaSlice, route.DefaultQuotaSlice, 0, 6000},
		{"anthropic", http.Header{
			"Anthropic-Ratelimit-Requests-Limit": {"50"}, "Anthropic-Ratelimit-Requests-Remaining": {"49"}, "Anthropic-Ratelimit-Requests-Reset": {qt0.Add(2 * time.Second).Format(time.RFC3339)},
			"Anthropic-Ratelimit-Input-Tokens-Limit": {"40000"}, "Anthropic-Ratelimit-Input-Tokens-Remaining": {"39000"}, "Anthropic-Ratelimit-Input-Tokens-Reset": {qt0.Add(time.Minute).Format(time.RFC3339)},
		}, 49, 39000, 2 * time.Second, time.Minute, 50, 40000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q route.LocalQuota
			q.Observe(qt0, qt0, 200, tt.h)
			s := q.Snapshot(qt0)
			if !s.RequestsKnown || s.Requests != tt.wantReq || !s.TokensKnown || s.Tokens != tt.wantTok {
				t.Fatalf("snapshot %+v", s)
			}
			if s.RequestsReset != qt0.Add(tt.reqReset) || s.TokensReset != qt0.Add(tt.tokReset) || s.RequestLimit != tt.reqLim || s.TokenLimit != tt.tokLm {
				t.Fatalf("resets or limits %+v", s)
			}
		})
	}
	// OpenRouter's reset is an instant in Unix milliseconds.
	var or route.LocalQuota
	or.Observe(qt0, qt0, 200, http.Header{"X-Ratelimit-Limit": {"20"}, "X-Ratelimit-Remaining": {"0"},
		"X-Ratelimit-Reset": {strconv.FormatInt(qt0.Add(40*time.Second).UnixMilli(), 10)}})
	if s := or.Snapshot(qt0); !s.RequestsKnown || s.Requests != 0 || s.RequestsReset != qt0.Add(40*time.Second) {
		t.Fatalf("openrouter snapshot %+v", s)
	}
	// Headers it does not understand change nothing.
	var q route.LocalQuota
	q.Observe(qt0, qt0, 200, http.Header{"X-Ratelimit-Remaining-Requests": {"lots"}})
	if s := q.Snapshot(qt0); s.RequestsKnown {
		t.Fatalf("unreadable header taken: %+v", s)
	}
}

// TestLocalQuotaReservesCallsInFlight is the regression test for
// mis-routing under concurrency (a router that reads "3 left" and sends
// ten): admitted calls count against what is left until they are
// answered.
func TestLocalQuotaReservesCallsInFlight(t *testing.T) {
	var q route.LocalQuota
	q.Observe(qt0, qt0, 200, http.Header{"X-Ratelimit-Remaining-Requests": {"3"}, "X-Ratelimit-Reset-Requests": {"10s"}})
	var mu sync.Mutex
	var releases []func()
	var wg sync.WaitGroup
	admitted := 0
	for range 10 {
		wg.Go(func() {
			if release, ok, _ := q.Admit(qt0, cost(1)); ok {
				mu.Lock()
				admitted++
				releases = append(releases, release)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if admitted != 3 {
		t.Fatalf("%d admitted with 3 left", admitted)
	}
	if ok, until := q.Fits(qt0, cost(1)); ok || until != qt0.Add(10*time.Second) {
		t.Fatalf("fits with none left: %v until %v", ok, until)
	}
	releases[0]()
	releases[0]() // twice is once
	if ok, _ := q.Fits(qt0, cost(1)); !ok {
		t.Fatal("a released reservation did not come back")
	}
	if s := q.Snapshot(qt0); s.Requests != 1 {
		t.Fatalf("left %d, want 1", s.Requests)
	}
	// Past the reset, the window is unknown again: everything fits.
	if ok, _ := q.Fits(qt0.Add(10*time.Second), cost(1)); !ok {
		t.Fatal("held past the window's reset")
	}
}

func TestLocalQuotaTokens(t *testing.T) {
	var q route.LocalQuota
	q.Observe(qt0, qt0, 200, http.Header{"X-Ratelimit-Remaining-Tokens": {"1000"}, "X-Ratelimit-Limit-Tokens": {"6000"}, "X-Ratelimit-Reset-Tokens": {"4s"}})
	tests := []struct {
		name   string
		tokens int64
		fits   bool
	}{
		{"fits", 900, true},
		{"over what is left", 1100, false},
		{"over the whole limit: the backend's own 429 says so", 7000, true},
	}
	for _, tt := range tests {
		if ok, _ := q.Fits(qt0, cost(tt.tokens)); ok != tt.fits {
			t.Errorf("%s: fits %v, want %v", tt.name, ok, tt.fits)
		}
	}
	release, ok, _ := q.Admit(qt0, cost(600))
	if !ok {
		t.Fatal("600 of 1000 refused")
	}
	if ok, _ := q.Fits(qt0, cost(600)); ok {
		t.Fatal("a second 600 fits in the 400 left")
	}
	release()
	if ok, _ := q.Fits(qt0, cost(600)); !ok {
		t.Fatal("released tokens not back")
	}
}

func TestLocalQuotaHoldsThrottledUntilRetryAfter(t *testing.T) {
	var q route.LocalQuota
	q.Observe(qt0, qt0, 429, http.Header{"Retry-After": {"7"}})
	if ok, until := q.Fits(qt0.Add(6*time.Second), cost(1)); ok || until != qt0.Add(7*time.Second) {
		t.Fatalf("after a 429 with Retry-After 7: fits %v until %v", ok, until)
	}
	if ok, _ := q.Fits(qt0.Add(7*time.Second), cost(1)); !ok {
		t.Fatal("held past Retry-After")
	}
	// A 200 with Retry-After (some proxies) is not a refusal.
	var q2 route.LocalQuota
	q2.Observe(qt0, qt0, 200, http.Header{"Retry-After": {"7"}})
	if ok, _ := q2.Fits(qt0, cost(1)); !ok {
		t.Fatal("a 200's Retry-After held the backend")
	}
}

// TestLocalQuotaForgetLiftsARetryAfterHold: forcing a breaker closed kept
// answering 429 "no call was sent" until a 300 s Retry-After ran out;
// Forget lifts the hold (and says until when it would have held), keeps
// the limit, and the next answer is read again as usual.
func TestLocalQuotaForgetLiftsARetryAfterHold(t *testing.T) {
	var q route.LocalQuota
	q.Observe(qt0, qt0, 200, http.Header{"X-Ratelimit-Limit-Requests": {"60"}, "X-Ratelimit-Remaining-Requests": {"59"}})
	q.Observe(qt0, qt0, 429, http.Header{"Retry-After": {"300"}})
	now := qt0.Add(time.Second)
	if ok, _ := q.Fits(now, cost(1)); ok {
		t.Fatal("a 429 with Retry-After 300 did not hold the backend")
	}
	if held := q.Forget(now); !held.Equal(qt0.Add(300 * time.Second)) {
		t.Fatalf("Forget says the hold ended at %v, want %v", held, qt0.Add(300*time.Second))
	}
	if ok, _ := q.Fits(now, cost(1)); !ok {
		t.Fatal("still held after Forget")
	}
	if s := q.Snapshot(now); s.RequestLimit != 60 || s.RequestsKnown {
		t.Fatalf("after Forget: %+v, want the limit kept and nothing known of what is left", s)
	}
	if held := q.Forget(now); !held.IsZero() {
		t.Fatalf("Forget with nothing held says %v", held)
	}
	q.Observe(now, now, 429, http.Header{"Retry-After": {"5"}})
	if ok, until := q.Fits(now, cost(1)); ok || !until.Equal(now.Add(5*time.Second)) {
		t.Fatalf("after Forget, a new 429: fits %v until %v", ok, until)
	}
}

// TestHeadroomComparesTheSliceWithItsShareOfTheLimit is the regression
// test for an idle Azure backend whose headroom read 16%: what is left of
// a 10-second slice was divided by the per-minute limit. It is compared
// with the slice's share of the limit (or the most the window was seen to
// hold), and a window that has reset is full; a backend that names its
// reset counts against its limit itself.
func TestHeadroomComparesTheSliceWithItsShareOfTheLimit(t *testing.T) {
	azure := func(rpm, left, tpm, tokLeft int) http.Header {
		h := http.Header{"X-Ratelimit-Limit-Requests": {strconv.Itoa(rpm)}, "X-Ratelimit-Remaining-Requests": {strconv.Itoa(left)}}
		if tpm > 0 {
			h.Set("X-Ratelimit-Limit-Tokens", strconv.Itoa(tpm))
			h.Set("X-Ratelimit-Remaining-Tokens", strconv.Itoa(tokLeft))
		}
		return h
	}
	tests := []struct {
		name  string
		slice time.Duration
		h     http.Header
		after time.Duration // when Headroom is read, after the answer
		want  float64
	}{
		{"azure, the first call of a slice", 0, azure(60, 9, 0, 0), time.Second, 0.9},
		{"azure, half the slice used", 0, azure(60, 5, 0, 0), time.Second, 0.5},
		{"azure, idle: the slice has refilled", 0, azure(60, 9, 0, 0), 11 * time.Second, 1},
		{"azure, tokens the scarcer", 0, azure(60, 9, 60000, 4000), time.Second, 0.4},
		{"azure, 1-second slices", time.Second, azure(600, 9, 0, 0), 100 * time.Millisecond, 0.9},
		{"azure, a limit under one call a slice", 0, azure(3, 0, 0, 0), time.Second, 0},
		{"openai, with a reset: against the limit", 0, http.Header{
			"X-Ratelimit-Limit-Requests": {"60"}, "X-Ratelimit-Remaining-Requests": {"30"}, "X-Ratelimit-Reset-Requests": {"30s"}}, time.Second, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := route.LocalQuota{Slice: tt.slice}
			q.Observe(qt0, qt0, 200, tt.h)
			got, known := q.Headroom(qt0.Add(tt.after))
			if !known || math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("headroom %v (known %v), want %v", got, known, tt.want)
			}
		})
	}
}

// limitedAnswer answers as name with the rate-limit headers of a region
// that has left requests left in its window.
func limitedAnswer(name string, left int) step {
	return func(w http.ResponseWriter, r *http.Request) {
		answer(name)(&rateWriter{ResponseWriter: w, left: left}, r)
	}
}

// rateWriter sets the rate-limit headers over whatever the answer set,
// as its headers go out.
type rateWriter struct {
	http.ResponseWriter
	left  int
	wrote bool
}

func (w *rateWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		h := w.Header()
		h.Set("X-Ratelimit-Limit-Requests", "60")
		h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(w.left))
		h.Set("X-Ratelimit-Reset-Requests", "10s")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rateWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// TestPoolSendsNoCallAQuotaRefuses: a region whose headers say its window
// is spent gets no call until the window resets; the pool answers from
// the next one, and when every region is spent answers 429 at once,
// without a call, with the soonest reset as Retry-After.
func TestPoolSendsNoCallAQuotaRefuses(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "uks", priority: 1, script: []step{limitedAnswer("uks", 1), limitedAnswer("uks", 0), answer("uks")}},
		memberSpec{name: "weu", priority: 2, script: []step{limitedAnswer("weu", 0), answer("weu")}},
	)
	for _, b := range e.backends {
		b.Quota = &route.LocalQuota{}
	}
	want := []string{"uks", "uks", "weu"} // uks says 1 left, then 0: the third goes to weu
	for i, w := range want {
		resp, _, _ := e.do(t, chatBody)
		if got := resp.Header.Get(route.HeaderBackend); got != w {
			t.Fatalf("request %d served by %q, want %s", i, got, w)
		}
	}
	if n := e.ups["uks"].Calls(); n != 2 {
		t.Fatalf("uks got %d calls, want 2: none once it said it had none left", n)
	}
	// Both spent: refused at once, no call, Retry-After the reset.
	resp, rep, _ := e.do(t, chatBody)
	if resp.StatusCode != 429 || len(rep.Attempts) != 0 || len(rep.OutOfQuota) != 2 || resp.Header.Get("Retry-After") != "10" {
		t.Fatalf("all spent: %d, %d attempts, held %v, Retry-After %q", resp.StatusCode, len(rep.Attempts), rep.OutOfQuota, resp.Header.Get("Retry-After"))
	}
	if e.ups["uks"].Calls()+e.ups["weu"].Calls() != 3 {
		t.Fatalf("calls sent to spent regions: uks %d, weu %d", e.ups["uks"].Calls(), e.ups["weu"].Calls())
	}
	if n := len(e.events.kinds(route.EventQuotaHeld)); n < 2 {
		t.Fatalf("%d quota-held events", n)
	}
	// The window resets: uks takes calls again.
	e.clock.Advance(10 * time.Second)
	if resp, _, _ := e.do(t, chatBody); resp.Header.Get(route.HeaderBackend) != "uks" {
		t.Fatalf("after the reset served by %q", resp.Header.Get(route.HeaderBackend))
	}
}

// TestLocalQuotaLearnsWindowsWithoutReset: a backend that names no reset
// (Azure) refills every slice from the first answer after a refill; the
// window is not pushed back by every answer.
func TestLocalQuotaLearnsWindowsWithoutReset(t *testing.T) {
	q := route.LocalQuota{Slice: 10 * time.Second}
	left := func(n int) http.Header { return http.Header{"X-Ratelimit-Remaining-Requests": {strconv.Itoa(n)}} }
	at := func(d time.Duration) time.Time { return qt0.Add(d) }
	q.Observe(at(0), at(0), 200, left(5))
	q.Observe(at(4*time.Second), at(4*time.Second), 200, left(2)) // same window: reset stays at 10 s
	if s := q.Snapshot(at(4 * time.Second)); s.RequestsReset != at(10*time.Second) || s.Requests != 2 {
		t.Fatalf("window moved: %+v", s)
	}
	q.Observe(at(6*time.Second), at(6*time.Second), 200, left(0))
	if ok, until := q.Fits(at(9*time.Second), cost(1)); ok || until != at(10*time.Second) {
		t.Fatalf("spent window: fits %v until %v", ok, until)
	}
	// A refill seen at 12 s is the next window, in the same phase: 10 s
	// to 20 s.
	q.Observe(at(12*time.Second), at(12*time.Second), 200, left(9))
	if s := q.Snapshot(at(12 * time.Second)); s.RequestsReset != at(20*time.Second) || s.Requests != 9 {
		t.Fatalf("next window: %+v", s)
	}
}

// TestLocalQuotaRefillAnsweredOutOfOrder is the regression test for calls
// refused as a window refilled (patient callers made 1.20 calls per
// request): nine calls sent within milliseconds of each other reach the
// backend in any order, and the first answer back may be from the last
// one sent yet counted first ("9 left" of 10). What is left is 1, not 9:
// the calls sent just before it count against its figure too.
func TestLocalQuotaRefillAnsweredOutOfOrder(t *testing.T) {
	q := route.LocalQuota{Slice: 10 * time.Second}
	left := func(n int) http.Header { return http.Header{"X-Ratelimit-Remaining-Requests": {strconv.Itoa(n)}} }
	at := func(d time.Duration) time.Time { return qt0.Add(d) }
	q.Observe(at(300*time.Millisecond), at(0), 200, left(9))
	q.Observe(at(2*time.Second), at(1700*time.Millisecond), 200, left(0))
	var sent []time.Time
	for i := range 9 {
		s := at(10*time.Second + time.Duration(i)*time.Millisecond)
		if _, ok, _ := q.Admit(s, cost(1)); !ok {
			t.Fatalf("call %d of the fresh window refused", i+1)
		}
		sent = append(sent, s)
	}
	if ok, _ := q.Fits(at(10*time.Second+9*time.Millisecond), cost(1)); ok {
		t.Fatal("a tenth call fits a fresh window known to hold nine")
	}
	q.Observe(at(10300*time.Millisecond), sent[8], 200, left(9))
	if s := q.Snapshot(at(10300 * time.Millisecond)); s.Requests > 1 {
		t.Fatalf("left %d with nine calls sent into a window of ten", s.Requests)
	}
}

// TestLocalQuotaHigherFigureInTheSameWindowIsOlder is the regression test
// for a window taken to have refilled because a call sent later, but
// counted earlier, said more was left: only a call sent after the lower
// figure came back can show a refill.
func TestLocalQuotaHigherFigureInTheSameWindowIsOlder(t *testing.T) {
	q := route.LocalQuota{Slice: 10 * time.Second}
	left := func(n int) http.Header { return http.Header{"X-Ratelimit-Remaining-Requests": {strconv.Itoa(n)}} }
	at := func(d time.Duration) time.Time { return qt0.Add(d) }
	q.Observe(at(1300*time.Millisecond), at(time.Second), 200, left(5))
	q.Observe(at(1400*time.Millisecond), at(1100*time.Millisecond), 200, left(8)) // sent before 5 came back
	if s := q.Snapshot(at(1400 * time.Millisecond)); s.Requests != 5 {
		t.Fatalf("left %d, want 5", s.Requests)
	}
	q.Observe(at(1800*time.Millisecond), at(1500*time.Millisecond), 200, left(8)) // sent after: a refill
	if s := q.Snapshot(at(1800 * time.Millisecond)); s.Requests != 8 || s.RequestsReset != at(11500*time.Millisecond) {
		t.Fatalf("refill not seen: %+v", s)
	}
}

// TestLocalQuotaLearnsThePhaseFromRetryAfter: a windowed backend's 429
// says when its next slice starts; the windows after it keep that phase.
func TestLocalQuotaLearnsThePhaseFromRetryAfter(t *testing.T) {
	q := route.LocalQuota{Slice: 10 * time.Second}
	at := func(d time.Duration) time.Time { return qt0.Add(d) }
	q.Observe(at(13200*time.Millisecond), at(13*time.Second), 429, http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "Retry-After-Ms": {"6800"}})
	if ok, until := q.Fits(at(19*time.Second), cost(1)); ok || until != at(20*time.Second) {
		t.Fatalf("fits %v until %v, want held to 20 s", ok, until)
	}
	q.Observe(at(21300*time.Millisecond), at(21*time.Second), 200, http.Header{"X-Ratelimit-Remaining-Requests": {"9"}})
	if s := q.Snapshot(at(21300 * time.Millisecond)); s.RequestsReset != at(30*time.Second) {
		t.Fatalf("window %+v, want 20 s to 30 s", s)
	}
}

// TestLocalQuotaCountsNoCallTwice is the regression test for subtracting
// calls the backend had already counted: an answer's figure includes the
// calls admitted before the call it answers was sent, so only those
// admitted since are taken off it.
func TestLocalQuotaCountsNoCallTwice(t *testing.T) {
	var q route.LocalQuota
	h := http.Header{"X-Ratelimit-Remaining-Requests": {"3"}, "X-Ratelimit-Reset-Requests": {"10s"}}
	q.Observe(qt0, qt0, 200, h)
	early, _, _ := q.Admit(qt0.Add(time.Second), cost(1))  // sent at 1 s
	late, _, _ := q.Admit(qt0.Add(3*time.Second), cost(1)) // sent at 3 s
	// The answer to a call sent at 2 s says 2 left: it counts the 1 s
	// call, not the 3 s one.
	q.Observe(qt0.Add(4*time.Second), qt0.Add(2*time.Second), 200, http.Header{"X-Ratelimit-Remaining-Requests": {"2"}, "X-Ratelimit-Reset-Requests": {"6s"}})
	if s := q.Snapshot(qt0.Add(4 * time.Second)); s.Requests != 1 {
		t.Fatalf("left %d, want 2 less the 3 s call", s.Requests)
	}
	early()
	late()
	if s := q.Snapshot(qt0.Add(4 * time.Second)); s.Requests != 2 {
		t.Fatalf("left %d after both answered", s.Requests)
	}
}

// TestInFlightCountsAttemptsUntilTheyEnd: an attempt counts as in flight
// on its backend from its start until its answer is read (a stream: until
// its body closes), for least_busy.
func TestInFlightCountsAttemptsUntilTheyEnd(t *testing.T) {
	e := newEnv(t, memberSpec{name: "weu", priority: 1, script: []step{sse("weu", 3, -1)}})
	b := e.backends["weu"]
	r, err := route.NewRequest(route.ChatCompletions, []byte(streamBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := e.pool.Do(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.InFlight(); n != 1 {
		t.Fatalf("in flight while the stream is open: %d", n)
	}
	resp.Body.Close()
	if n := b.InFlight(); n != 0 {
		t.Fatalf("in flight after close: %d", n)
	}
}

// TestLocalQuotaIgnoresAnswersThatComeBackLate is the regression test for
// answers arriving out of order: a call sent earlier whose answer comes
// back after a later one's says more was left, and must not undo it.
func TestLocalQuotaIgnoresAnswersThatComeBackLate(t *testing.T) {
	var q route.LocalQuota
	left := func(n int) http.Header { return http.Header{"X-Ratelimit-Remaining-Requests": {strconv.Itoa(n)}} }
	q.Observe(qt0.Add(3*time.Second), qt0.Add(2*time.Second), 200, left(1)) // sent at 2 s
	q.Observe(qt0.Add(4*time.Second), qt0.Add(1*time.Second), 200, left(4)) // sent at 1 s, back later
	if s := q.Snapshot(qt0.Add(4 * time.Second)); s.Requests != 1 {
		t.Fatalf("left %d, want the later call's 1", s.Requests)
	}
}

// TestRetryRefusedByTheBudgetReleasesItsQuota is the regression test for a
// quota reservation kept by a retry the retry budget refused: the member
// would have looked a call fuller for good.
func TestRetryRefusedByTheBudgetReleasesItsQuota(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{status(503)}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	e.pool.RetryBudget = &route.RetryBudget{Ratio: -1, MinPerSecond: -1} // no retry at all
	q := &route.LocalQuota{}
	e.backends["sec"].Quota = q
	now := e.clock.Now()
	q.Observe(now, now, 200, http.Header{"X-Ratelimit-Remaining-Requests": {"5"}, "X-Ratelimit-Reset-Requests": {"10s"}})
	resp, rep, _ := e.do(t, chatBody)
	if resp.StatusCode != 503 || !rep.RetryBudgetSpent {
		t.Fatalf("%d, budget spent %v", resp.StatusCode, rep.RetryBudgetSpent)
	}
	if s := q.Snapshot(e.clock.Now()); s.Requests != 5 {
		t.Fatalf("sec has %d left, want 5: the refused retry kept its reservation", s.Requests)
	}
}

// TestLocalQuotaAdmitAllocatesOnce: an admitted call costs the quota one
// allocation, its release (the reservation is kept by value), where it
// took two.
func TestLocalQuotaAdmitAllocatesOnce(t *testing.T) {
	if route.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	var q route.LocalQuota
	q.Observe(qt0, qt0, 200, http.Header{"X-Ratelimit-Remaining-Requests": {"1000"}, "X-Ratelimit-Reset-Requests": {"10s"}})
	if n := testing.AllocsPerRun(100, func() {
		release, _, _ := q.Admit(qt0, cost(1))
		release()
	}); n > 1 {
		t.Errorf("Admit allocates %v times, want 1", n)
	}
}
