package proxy

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// deadlineWriter is a ResponseWriter whose connection's read deadline a
// test reads.
type deadlineWriter struct {
	http.ResponseWriter
	mu       sync.Mutex
	deadline time.Time
}

func (w *deadlineWriter) SetReadDeadline(t time.Time) error {
	w.mu.Lock()
	w.deadline = t
	w.mu.Unlock()
	return nil
}

func (w *deadlineWriter) cut() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.deadline.IsZero()
}

// TestBodyDeadline checks the rule: a body may take the grace, then must
// have arrived at the minimum rate on average since it began.
func TestBodyDeadline(t *testing.T) {
	const grace, rate = 10 * time.Second, 1000 // bytes a second
	type step struct {
		read  int64         // the body has this many bytes
		after time.Duration // then the clock moves this far
	}
	tests := []struct {
		name  string
		rate  int64
		steps []step
		cut   bool
	}{
		{"nothing within the grace", rate, []step{{0, grace - time.Millisecond}}, false},
		{"nothing past the grace", rate, []step{{0, grace}}, true},
		{"at the rate, for long", rate, []step{{5000, grace}, {10_000, 5 * time.Second}, {20_000, 10 * time.Second}, {3_620_000, time.Hour}}, false},
		{"a burst, then a stall paid by the burst", rate, []step{{30_000, grace}, {30_000, 29 * time.Second}}, false},
		{"a burst, then a stall past what it paid", rate, []step{{30_000, grace}, {30_000, 31 * time.Second}}, true},
		{"a byte a second", rate, []step{{10, grace}, {11, time.Second}}, true},
		{"no rate: the grace is all", 0, []step{{100, grace - time.Millisecond}, {1 << 20, time.Millisecond}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := fakeclock.New()
			d := newBodyDeadline(clk)
			w := &deadlineWriter{}
			if !d.watch(w, grace, tt.rate) {
				t.Fatal("nothing watched")
			}
			for _, s := range tt.steps {
				d.read.Store(s.read)
				clk.Advance(s.after)
			}
			if got := d.stop(); got != tt.cut || w.cut() != tt.cut {
				t.Fatalf("expired %v, read deadline set %v; want %v", got, w.cut(), tt.cut)
			}
			if d.watch(w, grace, tt.rate) && d.stop() {
				t.Fatal("a watch used again starts expired")
			}
		})
	}
	if newBodyDeadline(fakeclock.New()).watch(&deadlineWriter{}, 0, rate) {
		t.Fatal("with no grace, a body was watched")
	}
}
