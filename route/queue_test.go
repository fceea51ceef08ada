package route_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/route"
)

// spentEnv is a pool of one region that answers every call saying its
// window is spent for the next 10 s.
func spentEnv(t *testing.T) *env {
	e := newEnv(t, memberSpec{name: "uks", priority: 1, script: []step{limitedAnswer("uks", 0)}})
	e.backends["uks"].Quota = &route.LocalQuota{}
	if resp, _, _ := e.do(t, chatBody); resp.StatusCode != 200 {
		t.Fatalf("first call: %d", resp.StatusCode)
	}
	return e
}

func patient(t *testing.T, wait time.Duration) *route.Request {
	r, err := route.NewRequest(route.ChatCompletions, []byte(chatBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.MaxWait = wait
	return r
}

type servedAs struct {
	name   string
	status int
	waited string
}

// TestPatientRequestsAreServedInArrivalOrder: requests that may wait are
// held while the region's window is spent and released one per window as
// it refills, first come first served, each with how long it waited.
func TestPatientRequestsAreServedInArrivalOrder(t *testing.T) {
	e := spentEnv(t)
	done := make(chan servedAs, 3)
	send := func(name string) {
		go func() {
			resp, _, err := e.pool.Do(context.Background(), patient(t, time.Minute))
			if err != nil {
				done <- servedAs{name: name}
				return
			}
			resp.Body.Close()
			done <- servedAs{name, resp.StatusCode, resp.Header.Get(route.HeaderQueueWait)}
		}()
	}
	// A waits for the reset and its deadline; B and C for their turn and
	// their deadlines.
	send("A")
	e.clock.BlockUntil(2)
	send("B")
	e.clock.BlockUntil(3)
	send("C")
	e.clock.BlockUntil(4)
	var order []servedAs
	// Once A is served, B (the head) waits for the next reset and its
	// deadline, C for its deadline; once B is, C for both.
	for _, pending := range []int{3, 2, 0} {
		e.clock.Advance(10 * time.Second)
		order = append(order, <-done)
		e.clock.BlockUntil(pending)
	}
	for i, want := range []string{"A", "B", "C"} {
		if order[i].name != want || order[i].status != 200 {
			t.Fatalf("served %+v, want A, B, C with 200", order)
		}
	}
	if order[0].waited != "10000" || order[2].waited != "30000" {
		t.Fatalf("waits %q, %q", order[0].waited, order[2].waited)
	}
	if n := e.ups["uks"].Calls(); n != 4 {
		t.Fatalf("%d calls: one per window, none refused", n)
	}
}

// TestPatientRequestPastItsDeadline: a request whose wait would end after
// its own deadline gets the usual 429 at once; one without patience too.
func TestPatientRequestPastItsDeadline(t *testing.T) {
	e := spentEnv(t)
	for _, wait := range []time.Duration{0, 5 * time.Second} {
		resp, rep, err := e.pool.Do(context.Background(), patient(t, wait))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || rep.Waited != 0 || resp.Header.Get("Retry-After") != "10" {
			t.Fatalf("max wait %v: %d, waited %v, Retry-After %q", wait, resp.StatusCode, rep.Waited, resp.Header.Get("Retry-After"))
		}
	}
}

// TestQueuedRequestWhoseClientLeaves leaves the queue, and the next one
// is served in its place.
func TestQueuedRequestWhoseClientLeaves(t *testing.T) {
	e := spentEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, _, err := e.pool.Do(ctx, patient(t, time.Minute))
		gone <- err
	}()
	e.clock.BlockUntil(2)
	served := make(chan int, 1)
	go func() {
		resp, _, err := e.pool.Do(context.Background(), patient(t, time.Minute))
		if err != nil {
			served <- 0
			return
		}
		resp.Body.Close()
		served <- resp.StatusCode
	}()
	e.clock.BlockUntil(3)
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("the request whose client left was answered")
	}
	e.clock.BlockUntil(2) // the second is the head now: its reset and deadline
	e.clock.Advance(10 * time.Second)
	if code := <-served; code != 200 {
		t.Fatalf("next in line: %d", code)
	}
}

// fitsAtObserve is a LocalQuota that, as each answer's figures come in,
// first records whether another call would fit at that moment.
type fitsAtObserve struct {
	*route.LocalQuota
	probe *route.Request

	mu   sync.Mutex
	fits []bool
}

func (q *fitsAtObserve) Observe(now, sent time.Time, status int, h http.Header) {
	ok, _ := q.LocalQuota.Fits(now, q.probe)
	q.mu.Lock()
	q.fits = append(q.fits, ok)
	q.mu.Unlock()
	q.LocalQuota.Observe(now, sent, status, h)
}

// TestReservationOutlastsItsAnswerUntilObserved: a call's quota
// reservation ends only once its answer's rate-limit figures are
// recorded. It used to end as the answer's headers came in, before they
// were read: in between, the window had reset and nothing was reserved,
// so another call (the next in the queue) fitted, and was sent into the
// window the answer was about to say is spent. That is why
// TestPatientRequestsAreServedInArrivalOrder hung about once in 700 runs:
// two queued requests were served in one window, and the timers the test
// waited for were never armed.
func TestReservationOutlastsItsAnswerUntilObserved(t *testing.T) {
	e := newEnv(t, memberSpec{name: "uks", priority: 1, script: []step{limitedAnswer("uks", 0)}})
	q := &fitsAtObserve{LocalQuota: &route.LocalQuota{}, probe: patient(t, 0)}
	e.backends["uks"].Quota = q
	e.do(t, chatBody)                 // the window is spent for 10 s
	e.clock.Advance(10 * time.Second) // it resets: room for one call until one answers
	if resp, _, _ := e.do(t, chatBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("the call in the new window: %d", resp.StatusCode)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.fits) != 2 || q.fits[1] {
		t.Fatalf("another call fitted as the second answer came in (%v): its reservation had ended before its figures were read", q.fits)
	}
}

// TestQueuedRequestWakesAtTheResetThoughTheClockMovedMeanwhile: a
// request queued for quota tries again at the reset its pool named, even
// when the clock moved between that answer and the queue arming its wait
// (here an observer of the queueing takes 4 s). It used to turn the reset
// into a delay and count it again from the later reading, and woke 4 s
// late; a test that moved its fake clock to the reset while a request was
// in between waited for it forever.
func TestQueuedRequestWakesAtTheResetThoughTheClockMovedMeanwhile(t *testing.T) {
	e := spentEnv(t) // the window resets in 10 s
	reset := e.clock.Now().Add(10 * time.Second)
	e.pool.Observer = route.ObserverFunc(func(ev route.Event) {
		if ev.Kind == route.EventQueued {
			e.clock.Advance(4 * time.Second)
		}
	})
	type result struct {
		status int
		waited string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, _, err := e.pool.Do(t.Context(), patient(t, time.Minute))
		if err != nil {
			done <- result{err: err}
			return
		}
		resp.Body.Close()
		done <- result{resp.StatusCode, resp.Header.Get(route.HeaderQueueWait), nil}
	}()
	e.clock.BlockUntil(2) // its deadline, and its wait for the reset
	e.clock.Advance(reset.Sub(e.clock.Now()))
	poll.Until(t, 10*time.Second, func() bool { return len(done) > 0 }, func() string {
		return "the request still waits at the reset, " + e.clock.Now().Format(time.TimeOnly)
	})
	if r := <-done; r.err != nil || r.status != http.StatusOK || r.waited != "10000" {
		t.Fatalf("answered %+v, want 200 after 10000 ms", r)
	}
}
