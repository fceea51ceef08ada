package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
)

// guard bounds a wait so that a regression fails instead of hanging the
// suite. It is never used to assert timing.
const guard = 10 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// fakeWaiter returns at once and records the waits.
type fakeWaiter struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (f *fakeWaiter) Wait(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	f.waits = append(f.waits, d)
	f.mu.Unlock()
	return ctx.Err()
}

func (f *fakeWaiter) all() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.waits)
}

// gateSink blocks in Send until released (or its context ends) and records
// what it was sent.
type gateSink struct {
	name    string
	started chan Notification // receives each notification as Send begins
	release chan struct{}     // closed to let every Send finish
	mu      sync.Mutex
	got     []string
}

func newGateSink(name string) *gateSink {
	return &gateSink{name: name, started: make(chan Notification, 100), release: make(chan struct{})}
}

func (g *gateSink) Name() string { return g.name }

func (g *gateSink) Send(ctx context.Context, n Notification) error {
	g.started <- n
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	g.got = append(g.got, n.Reason)
	g.mu.Unlock()
	return nil
}

func (g *gateSink) received() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.got)
}

// funcSink calls a function.
type funcSink struct {
	name string
	send func(ctx context.Context, n Notification) error
}

func (f funcSink) Name() string                                   { return f.name }
func (f funcSink) Send(ctx context.Context, n Notification) error { return f.send(ctx, n) }

// observed collects deliveries.
type observed struct {
	mu sync.Mutex
	ds []Delivery
	ch chan Delivery
}

func newObserved() *observed { return &observed{ch: make(chan Delivery, 2000)} }

func (o *observed) ObserveDelivery(d Delivery) {
	o.mu.Lock()
	o.ds = append(o.ds, d)
	o.mu.Unlock()
	o.ch <- d
}

func (o *observed) all() []Delivery {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ds)
}

func note(i int) Notification {
	return Notification{Kind: KindFailover, Pool: "chat", Reason: fmt.Sprint(i), At: t0}
}

// dispatcherGoroutines counts goroutines started by NewDispatcher.
func dispatcherGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "created by github.com/switchover-gw/switchover/notify.NewDispatcher")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitGoroutines waits until the dispatcher goroutines are back to want:
// a goroutine that signalled its end may still be returning. It yields
// rather than sleeps, and gives up after guard.
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	var n int
	poll.Until(t, guard, func() bool { n = dispatcherGoroutines(); return n == want },
		func() string { return fmt.Sprintf("%d dispatcher goroutines, want %d: leak", n, want) })
}

func closeWithin(t *testing.T, d *Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestDispatcherSlowSinkDelaysNeitherEnqueueNorOtherSinks(t *testing.T) {
	release := make(chan struct{})
	slowGot := make(chan struct{}, 100)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slowGot <- struct{}{}
		<-release
	}))
	t.Cleanup(slow.Close)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before slow.Close, which waits for handlers

	fastGot := make(chan string, 100)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n Notification
		buf := new(bytes.Buffer)
		_, _ = buf.ReadFrom(r.Body)
		if err := n.UnmarshalJSON(buf.Bytes()); err != nil {
			t.Errorf("fast receiver: %v", err)
		}
		fastGot <- n.Reason
	}))
	t.Cleanup(fast.Close)

	d := NewDispatcher(DispatcherSettings{AttemptTimeout: time.Minute},
		&Webhook{Label: "slow", URL: slow.URL}, &Webhook{Label: "fast", URL: fast.URL})
	d.Enqueue(note(0))
	recv(t, slowGot, "the slow sink's first request")

	// The slow sink is stuck on note 0: Enqueue still returns, and the
	// fast sink still delivers everything.
	enqueued := make(chan struct{})
	go func() {
		for i := 1; i < 50; i++ {
			d.Enqueue(note(i))
		}
		close(enqueued)
	}()
	recv(t, enqueued, "Enqueue to return while a sink is blocked")
	for i := range 50 {
		if got := recv(t, fastGot, "the fast sink"); got != fmt.Sprint(i) {
			t.Fatalf("fast sink got %s, want %d (in order)", got, i)
		}
	}
	if st := d.Stats()[0]; st.Sent != 0 || st.Queued != 49 {
		t.Fatalf("slow sink while blocked %+v", st)
	}
	free()
	closeWithin(t, d)
	for _, st := range d.Stats() {
		if st.Sent != 50 || st.Queued != 0 || st.Failed+st.Dropped != 0 {
			t.Fatalf("after Close %+v", st)
		}
	}
}

func TestDispatcherRetries(t *testing.T) {
	cases := []struct {
		name      string
		status    []int // the receiver's answers, the last repeats
		settings  DispatcherSettings
		calls     int
		outcome   Outcome
		waits     []time.Duration
		errStatus int
	}{
		{"500 retried then failed", []int{500}, DispatcherSettings{}, 3, Failed, []time.Duration{time.Second, 2 * time.Second}, 500},
		{"recovers on the third attempt", []int{503, 429, 200}, DispatcherSettings{}, 3, Sent, []time.Duration{time.Second, 2 * time.Second}, 0},
		{"404 not retried", []int{404}, DispatcherSettings{}, 1, Failed, nil, 404},
		{"backoff capped", []int{500}, DispatcherSettings{Attempts: 5, Backoff: time.Second, MaxBackoff: 3 * time.Second}, 5, Failed,
			[]time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}, 500},
		{"one attempt", []int{500}, DispatcherSettings{Attempts: 1}, 1, Failed, nil, 500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				st := tc.status[min(calls, len(tc.status)-1)]
				calls++
				mu.Unlock()
				w.WriteHeader(st)
			}))
			t.Cleanup(srv.Close)
			fw := &fakeWaiter{}
			obs := newObserved()
			s := tc.settings
			s.Waiter, s.Observer = fw, obs
			d := NewDispatcher(s, &Webhook{URL: srv.URL})
			d.Enqueue(note(1))
			del := recv(t, obs.ch, "the delivery result")
			closeWithin(t, d)
			if del.Outcome != tc.outcome || del.Attempts != tc.calls || del.Sink != "webhook" || del.Notification.Reason != "1" {
				t.Errorf("delivery %+v", del)
			}
			var he *HTTPError
			if tc.errStatus != 0 && (!errors.As(del.Err, &he) || he.StatusCode != tc.errStatus) {
				t.Errorf("err %v, want status %d", del.Err, tc.errStatus)
			}
			if tc.errStatus == 0 && del.Err != nil {
				t.Errorf("err %v", del.Err)
			}
			mu.Lock()
			if calls != tc.calls {
				t.Errorf("receiver saw %d calls, want %d", calls, tc.calls)
			}
			mu.Unlock()
			if got := fw.all(); !slices.Equal(got, tc.waits) {
				t.Errorf("waits %v, want %v", got, tc.waits)
			}
			st := d.Stats()[0]
			if (tc.outcome == Sent) != (st.Sent == 1) || (tc.outcome == Failed) != (st.Failed == 1) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestDispatcherQueueOverflowDropsOldest(t *testing.T) {
	g := newGateSink("gate")
	obs := newObserved()
	d := NewDispatcher(DispatcherSettings{QueueSize: 2, Observer: obs}, g)
	d.Enqueue(note(1))
	recv(t, g.started, "the first Send") // note 1 is in flight, the queue is empty
	for i := 2; i <= 5; i++ {
		d.Enqueue(note(i))
	}
	// Drops are reported before Enqueue returns.
	var dropped []string
	for _, del := range obs.all() {
		if del.Outcome != Dropped || !errors.Is(del.Err, ErrQueueFull) || del.Sink != "gate" {
			t.Errorf("delivery %+v", del)
		}
		dropped = append(dropped, del.Notification.Reason)
	}
	if !slices.Equal(dropped, []string{"2", "3"}) {
		t.Fatalf("dropped %v, want the oldest: 2, 3", dropped)
	}
	if st := d.Stats()[0]; st.Dropped != 2 || st.Queued != 2 {
		t.Fatalf("stats %+v", st)
	}
	close(g.release)
	closeWithin(t, d)
	if got := g.received(); !slices.Equal(got, []string{"1", "4", "5"}) {
		t.Fatalf("delivered %v, want 1, 4, 5", got)
	}
}

func TestDispatcherCloseDrainsAndStops(t *testing.T) {
	// Dispatchers of earlier tests may still be returning: wait for them
	// rather than take a count that is still moving (the bug: on a busy
	// machine the count right after start was off by their exits).
	waitGoroutines(t, 0)
	before := 0
	g := newGateSink("gate")
	other := newGateSink("other")
	close(other.release)
	obs := newObserved()
	d := NewDispatcher(DispatcherSettings{Observer: obs}, g, other)
	waitGoroutines(t, before+3)
	for i := 1; i <= 3; i++ {
		d.Enqueue(note(i))
	}
	recv(t, g.started, "the first Send")
	closed := make(chan error, 1)
	go func() { closed <- d.Close(context.Background()) }()
	close(g.release) // Close waits for the queue: it cannot have returned yet
	if err := recv(t, closed, "Close"); err != nil {
		t.Fatal(err)
	}
	if got := g.received(); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("drained %v", got)
	}
	waitGoroutines(t, before)
	// Enqueue after Close drops, without blocking.
	d.Enqueue(note(4))
	var closedDrops int
	for _, del := range obs.all() {
		if del.Outcome == Dropped && errors.Is(del.Err, ErrClosed) {
			closedDrops++
		}
	}
	if closedDrops != 2 {
		t.Fatalf("%d drops after Close, want one per sink", closedDrops)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestDispatcherCloseGivesUpAtDeadline(t *testing.T) {
	before := dispatcherGoroutines()
	g := newGateSink("stuck") // never released
	obs := newObserved()
	d := NewDispatcher(DispatcherSettings{Observer: obs, AttemptTimeout: time.Hour}, g)
	for i := 1; i <= 3; i++ {
		d.Enqueue(note(i))
	}
	recv(t, g.started, "the first Send")
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan error, 1)
	go func() { closed <- d.Close(ctx) }()
	cancel()
	if err := recv(t, closed, "Close"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	var outcomes []string
	for _, del := range obs.all() {
		outcomes = append(outcomes, fmt.Sprint(del.Notification.Reason, ":", del.Outcome))
	}
	if !slices.Equal(outcomes, []string{"1:failed", "2:dropped", "3:dropped"}) {
		t.Fatalf("outcomes %v", outcomes)
	}
	waitGoroutines(t, before)
}

func TestDispatcherCloseStopsRetryWait(t *testing.T) {
	failing := funcSink{"failing", func(context.Context, Notification) error { return errors.New("down") }}
	obs := newObserved()
	d := NewDispatcher(DispatcherSettings{Observer: obs, Backoff: time.Hour}, failing) // real waiter
	d.Enqueue(note(1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v", err)
	}
	if del := recv(t, obs.ch, "the result"); del.Outcome != Failed && del.Outcome != Dropped {
		t.Fatalf("delivery %+v", del)
	}
}

func TestDispatcherSinkPanicIsAnError(t *testing.T) {
	calls := 0
	p := funcSink{"panicky", func(context.Context, Notification) error {
		calls++
		if calls == 1 {
			panic("boom")
		}
		return nil
	}}
	obs := newObserved()
	d := NewDispatcher(DispatcherSettings{Observer: obs, Waiter: &fakeWaiter{}}, p)
	d.Enqueue(note(1))
	d.Enqueue(note(2))
	a, b := recv(t, obs.ch, "first result"), recv(t, obs.ch, "second result")
	closeWithin(t, d)
	if a.Outcome != Sent || a.Attempts != 2 || b.Outcome != Sent {
		t.Fatalf("results %+v %+v", a, b)
	}
}

func TestDispatcherLogsWithoutSecrets(t *testing.T) {
	const token = "XXXXSECRET"
	srv := newReceiver(t, http.StatusInternalServerError)
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	obs := newObserved()
	d := NewDispatcher(DispatcherSettings{Logger: log, Observer: obs, Waiter: &fakeWaiter{}},
		&Slack{Label: "ops-slack", URL: srv.URL + "/services/" + token})
	d.Enqueue(note(1))
	recv(t, obs.ch, "the result")
	closeWithin(t, d)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if strings.Contains(out, token) {
		t.Fatalf("log leaks the URL: %s", out)
	}
	if !strings.Contains(out, "notification not delivered") || !strings.Contains(out, "sink=ops-slack") ||
		strings.Count(out, "retrying") != 2 {
		t.Fatalf("log %s", out)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestDispatcherWithTracker(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	obs := newObserved()
	d := NewDispatcher(DispatcherSettings{Observer: obs}, &Webhook{URL: rcv.URL})
	tr := NewTracker(TrackerSettings{Notify: d.Enqueue})
	tr.Update("chat", stA, "", t0)
	tr.Update("chat", stB, "429", t0.Add(time.Hour))
	recv(t, obs.ch, "the delivery")
	closeWithin(t, d)
	body, _, _ := rcv.request(0)
	if !strings.Contains(string(body), `"kind":"failover"`) {
		t.Fatalf("body %s", body)
	}
}
