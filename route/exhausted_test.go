package route_test

// Regression tests for issue 22's Retry-After: refusals told clients to
// come back when a 60 s trip ended (35-40 s, 58 s counting down) while the
// recovery probe brought the backend back within seconds, and the first
// answer on a dark owner had no Retry-After at all.

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
)

// TestRetryAfterIsTheNextProbeNotTheTripsEnd: with every member benched
// for a failure and probed every 5 s, the pool's refusal says to come back
// in 5 s, not when the 60 s trip ends; a bench the probe does not cut
// short (for quota, by an operator) keeps its own end.
func TestRetryAfterIsTheNextProbeNotTheTripsEnd(t *testing.T) {
	tests := []struct {
		name  string
		probe time.Duration
		kind  breaker.Kind
		want  string
	}{
		{"unresponsive, probed every 5s", 5 * time.Second, breaker.KindUnresponsive, "5"},
		{"server errors, probed every 5s", 5 * time.Second, breaker.KindServerError, "5"},
		{"unresponsive, no probe", 0, breaker.KindUnresponsive, "50"},
		{"forced open by an operator", 5 * time.Second, breaker.KindManual, "50"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{answer("weu")}},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			for _, b := range e.backends {
				b.ProbeInterval = tc.probe
				b.Breaker.Force(breaker.Open, time.Time{}, tc.kind, "test")
			}
			e.clock.Advance(10 * time.Second)
			resp, rep, _ := e.do(t, chatBody)
			if resp.StatusCode != http.StatusServiceUnavailable || len(rep.Attempts) != 0 {
				t.Fatalf("status %d, attempts %+v", resp.StatusCode, rep.Attempts)
			}
			if got := resp.Header.Get("Retry-After"); got != tc.want {
				t.Fatalf("Retry-After %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("benched for quota: its own Retry-After", func(t *testing.T) {
		follow := breaker.Settings{Failures: 1, FollowRetryAfter: true}
		e := newEnv(t,
			memberSpec{name: "weu", priority: 1, script: []step{status(429, "Retry-After", "30")}, settings: follow},
		)
		e.backends["weu"].ProbeInterval = 5 * time.Second
		e.do(t, chatBody)
		resp, _, _ := e.do(t, chatBody)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "30" {
			t.Fatalf("status %d, Retry-After %q, want 429 and 30", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	})
}

// ownerCall sends a chat request for state owned by owner through e's
// pool in its own goroutine (see goDo).
func (e *env) ownerCall(ctx context.Context, owner string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		r, err := route.NewRequest(route.ChatCompletions, []byte(chatBody), http.Header{"X-Request-Id": {"req-1"}})
		if err != nil {
			ch <- result{err: err}
			return
		}
		r.Owner = owner
		resp, rep, err := e.pool.Do(ctx, r)
		if resp != nil {
			resp.Body.Close()
		}
		ch <- result{resp: resp, rep: rep, err: err}
	}()
	return ch
}

// TestOwnerUnavailableCarriesRetryAfter: a follow-up for state on a
// backend that went dark is refused (no other backend has the state) once
// the backend is found unresponsive, within 10 s, with a Retry-After of the
// probe's cadence; later ones at once, with the same.
func TestOwnerUnavailableCarriesRetryAfter(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	dark := make(chan struct{})
	probed, arrived := make(chan struct{}, 8), make(chan struct{}, 8)
	weuStep := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-dark:
		default:
			answer("weu")(w, r)
			return
		}
		if isHealthCheck(r) {
			probed <- struct{}{}
		} else {
			arrived <- struct{}{}
		}
		hang(w, r)
	}
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{weuStep}, tune: func(b *route.Backend) {
			b.FirstByteTimeout, b.ProbeInterval = time.Minute, 5*time.Second
		}},
		memberSpec{name: "sec", priority: 1, script: []step{answer("sec")}},
	)
	weu := e.backends["weu"]
	for range 16 {
		e.do(t, chatBody) // weu and sec answer at once: their history
	}
	close(dark)
	slow, check := e.pool.SlowAfter(weu, false), e.pool.CheckTimeout(weu)
	if slow+check > 10*time.Second {
		t.Fatalf("slow threshold %v and check %v: the first refusal would come after 10s", slow, check)
	}
	first := e.ownerCall(ctx, "weu")
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("the follow-up did not reach its owner")
	}
	clk.Advance(slow)
	select {
	case <-probed:
	case <-ctx.Done():
		t.Fatal("no health check of the owner")
	}
	if err := clk.BlockUntilTimer(ctx, check); err != nil {
		t.Fatal(err)
	}
	clk.Advance(check)
	for i, ch := range []<-chan result{first, nil} {
		if ch == nil {
			ch = e.ownerCall(ctx, "weu") // the owner is benched: answered at once
		}
		res := await(t, ctx, ch)
		var oe *route.OwnerUnavailableError
		if !errors.As(res.err, &oe) {
			t.Fatalf("follow-up %d: %v, want an OwnerUnavailableError", i, res.err)
		}
		if oe.RetryAfter != 5*time.Second {
			t.Fatalf("follow-up %d: RetryAfter %v, want the probe's 5s (%s)", i, oe.RetryAfter, oe.Why)
		}
	}
	if n := e.ups["sec"].Calls(); n != 8 {
		t.Fatalf("sec got %d calls, want its 8 of the history: a follow-up went to a backend without its state", n)
	}
}
