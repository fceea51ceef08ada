package sim

import (
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

func TestPerSlice(t *testing.T) {
	tests := []struct {
		name      string
		perMinute int
		slice     time.Duration
		want      int64
	}{
		{"60 rpm over 10s", 60, 10 * time.Second, 10},
		{"60 rpm over 1s", 60, time.Second, 1},
		{"6 rpm over 10s", 6, 10 * time.Second, 1},
		{"rounds down", 100, 10 * time.Second, 16},
		{"at least one", 1, 10 * time.Second, 1},
		{"300 rpm over 200ms", 300, 200 * time.Millisecond, 1},
		{"whole minute", 90, time.Minute, 90},
		{"unlimited", 0, 10 * time.Second, 0},
		{"large tpm", 2_000_000_000, 10 * time.Second, 333_333_333},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := perSlice(tc.perMinute, tc.slice); got != tc.want {
				t.Errorf("perSlice(%d, %s) = %d, want %d", tc.perMinute, tc.slice, got, tc.want)
			}
		})
	}
}

func TestLimiterEleventhRequestInSliceIsRefused(t *testing.T) {
	clock := fakeclock.New()
	l := newLimiter(clock.Now(), 10*time.Second)
	lim := limits{rpm: 60}
	clock.Advance(2 * time.Second)
	for i := 1; i <= 10; i++ {
		a := l.admit(clock.Now(), lim, 1)
		if !a.ok {
			t.Fatalf("request %d refused", i)
		}
		if got, want := a.remainingRequests(), int64(10-i); got != want {
			t.Errorf("request %d: remaining %d, want %d", i, got, want)
		}
	}
	clock.Advance(3500 * time.Millisecond) // 5.5 s into the slice
	a := l.admit(clock.Now(), lim, 1)
	if a.ok || a.limitedBy != limitRequests {
		t.Fatalf("11th request: ok=%v limitedBy=%v, want refused by requests", a.ok, a.limitedBy)
	}
	if want := 4500 * time.Millisecond; a.untilNext != want {
		t.Errorf("retry after %s, want %s (to the next slice)", a.untilNext, want)
	}
	if a.reqUsed != 10 {
		t.Errorf("refusal charged: used %d, want 10", a.reqUsed)
	}
	clock.Advance(4500 * time.Millisecond) // the next slice starts
	if a := l.admit(clock.Now(), lim, 1); !a.ok {
		t.Fatal("first request of the next slice refused")
	} else if a.untilNext != 10*time.Second {
		t.Errorf("untilNext at slice start = %s, want 10s", a.untilNext)
	}
}

func TestLimiterTokensAndRefusedRequestsDoNotConsume(t *testing.T) {
	clock := fakeclock.New()
	l := newLimiter(clock.Now(), 10*time.Second)
	lim := limits{tpm: 600} // 100 tokens per slice
	steps := []struct {
		name   string
		cost   int64
		wantOK bool
		used   int64
	}{
		{"fits", 60, true, 60},
		{"would exceed", 50, false, 60},
		{"refusal left room for an exact fit", 40, true, 100},
		{"nothing left", 1, false, 100},
	}
	for _, st := range steps {
		a := l.admit(clock.Now(), lim, st.cost)
		if a.ok != st.wantOK || a.tokUsed != st.used {
			t.Fatalf("%s: ok=%v used=%d, want ok=%v used=%d", st.name, a.ok, a.tokUsed, st.wantOK, st.used)
		}
		if !a.ok && a.limitedBy != limitTokens {
			t.Errorf("%s: limitedBy %v, want tokens", st.name, a.limitedBy)
		}
	}
}

func TestLimiterRequestLimitCheckedBeforeTokens(t *testing.T) {
	clock := fakeclock.New()
	l := newLimiter(clock.Now(), time.Second)
	lim := limits{rpm: 60, tpm: 60} // 1 request and 1 token per slice
	if a := l.admit(clock.Now(), lim, 1); !a.ok {
		t.Fatal("first request refused")
	}
	if a := l.admit(clock.Now(), lim, 5); a.ok || a.limitedBy != limitRequests {
		t.Errorf("second request: ok=%v limitedBy=%v, want refused by requests", a.ok, a.limitedBy)
	}
}

func TestLimiterUnlimited(t *testing.T) {
	clock := fakeclock.New()
	l := newLimiter(clock.Now(), 10*time.Second)
	for range 1000 {
		if a := l.admit(clock.Now(), limits{}, 1_000_000); !a.ok {
			t.Fatal("unlimited quota refused a request")
		}
	}
	a := l.peek(clock.Now(), limits{})
	if a.remainingRequests() != -1 || a.remainingTokens() != -1 {
		t.Errorf("remaining = %d/%d, want -1/-1 for unlimited", a.remainingRequests(), a.remainingTokens())
	}
}

func TestLimiterPeekDoesNotCharge(t *testing.T) {
	clock := fakeclock.New()
	l := newLimiter(clock.Now(), 10*time.Second)
	lim := limits{rpm: 6}
	for range 5 {
		l.peek(clock.Now(), lim)
	}
	if a := l.admit(clock.Now(), lim, 0); !a.ok {
		t.Fatal("peeks used up the quota")
	}
}

func TestPerMinute(t *testing.T) {
	if got := perMinute(10, 10*time.Second); got != 60 {
		t.Errorf("perMinute(10, 10s) = %d, want 60", got)
	}
	if got := perMinute(1, 200*time.Millisecond); got != 300 {
		t.Errorf("perMinute(1, 200ms) = %d, want 300", got)
	}
}
