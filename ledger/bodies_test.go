package ledger_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
)

// TestWriterBoundsBodyMemory: past MaxBodyMemory a record is kept
// without its bodies (counted), and the bytes of a written batch's
// bodies are given back.
func TestWriterBoundsBodyMemory(t *testing.T) {
	rec := newFake(0)
	w := ledger.NewWriter(rec, ledger.WriterOptions{MaxBodyMemory: 100, Batch: 3, Every: time.Hour, Clock: fakeclock.New()})
	defer w.Close(context.Background())
	body := func(id string) ledger.Usage {
		return ledger.Usage{RequestID: id, Bodies: &ledger.Bodies{Request: []byte(strings.Repeat("x", 60))}}
	}
	w.Add(body("a"))
	w.Add(body("b")) // 120 bytes would be held: kept without its bodies
	if got := w.BodiesDropped(); got != 1 {
		t.Fatalf("BodiesDropped = %d after 120 bytes, want 1", got)
	}
	w.Add(ledger.Usage{RequestID: "c"}) // the third wakes the writer
	if err := rec.next(t); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() bool { return w.Pending() == 0 }, func() string { return fmt.Sprintf("%d pending", w.Pending()) })
	w.Add(body("d")) // the 60 bytes of "a" were given back
	if got := w.BodiesDropped(); got != 1 {
		t.Errorf("BodiesDropped = %d after the batch was written, want still 1", got)
	}
}
