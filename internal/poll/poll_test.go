package poll

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = format
	if len(args) > 1 {
		f.failed = args[1].(string)
	}
}

func TestUntil(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	ft := &fakeT{TB: t}
	Until(ft, 10*time.Second, func() bool { return n.Load() == 3 }, nil)
	if ft.failed != "" {
		t.Fatalf("a condition that holds failed: %s", ft.failed)
	}
	calls := 0
	Until(ft, 20*time.Millisecond, func() bool { calls++; return false }, func() string { return "never true" })
	if !strings.Contains(ft.failed, "never true") || calls < 2 {
		t.Fatalf("a condition that never holds: failure %q after %d calls", ft.failed, calls)
	}
}
