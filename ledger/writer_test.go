package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// fakeRecorder keeps what it is given, after failing the first fails
// calls, and reports each call on calls.
type fakeRecorder struct {
	mu    sync.Mutex
	fails int
	err   error
	got   map[string]int // RequestID → times stored
	sizes []int          // batch sizes of successful calls
	at    []time.Time    // times of the records stored
	calls chan error
}

func newFake(fails int) *fakeRecorder {
	return &fakeRecorder{fails: fails, err: errors.New("database is down"), got: map[string]int{}, calls: make(chan error, 1000)}
}

func (f *fakeRecorder) RecordUsage(ctx context.Context, b []ledger.Usage) error {
	f.mu.Lock()
	var err error
	if f.fails > 0 {
		f.fails--
		err = f.err
	} else {
		for _, u := range b {
			f.got[u.RequestID]++
			f.at = append(f.at, u.At)
		}
		f.sizes = append(f.sizes, len(b))
	}
	f.mu.Unlock()
	f.calls <- err
	return err
}

// next waits for the next call, failing the test after 10 s.
func (f *fakeRecorder) next(t *testing.T) error {
	t.Helper()
	select {
	case err := <-f.calls:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the writer made no call to the store within 10 s")
		return nil
	}
}

func (f *fakeRecorder) stored() (n int, twice int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.got {
		n++
		if c > 1 {
			twice++
		}
	}
	return n, twice
}

func usage(i int) ledger.Usage {
	return ledger.Usage{RequestID: fmt.Sprintf("r%d", i), PromptTokens: 1}
}

func closeWriter(t *testing.T, w *ledger.Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func block(t *testing.T, clk *fakeclock.Clock, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilTimer(ctx, d); err != nil {
		t.Fatalf("no %v timer armed: %v", d, err)
	}
}

func TestWriterFlushesEveryInterval(t *testing.T) {
	clk := fakeclock.New()
	f := newFake(0)
	w := ledger.NewWriter(f, ledger.WriterOptions{Batch: 100, Every: time.Second, Clock: clk})
	for i := range 3 {
		w.Add(usage(i))
	}
	block(t, clk, time.Second)
	if n, _ := f.stored(); n != 0 {
		t.Fatalf("%d records written before Every passed, want 0", n)
	}
	clk.Advance(time.Second)
	if err := f.next(t); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.stored(); n != 3 {
		t.Fatalf("%d records written after Every, want 3", n)
	}
	closeWriter(t, w)
}

func TestWriterWritesFullBatchesAtOnce(t *testing.T) {
	clk := fakeclock.New()
	f := newFake(0)
	w := ledger.NewWriter(f, ledger.WriterOptions{Batch: 10, Every: time.Hour, Clock: clk})
	for i := range 10 {
		w.Add(usage(i))
	}
	// No time passes: Batch waiting records wake the writer.
	if err := f.next(t); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	sizes := fmt.Sprint(f.sizes)
	f.mu.Unlock()
	if sizes != "[10]" {
		t.Fatalf("batch sizes %s, want [10]", sizes)
	}
	for i := 10; i < 35; i++ {
		w.Add(usage(i))
	}
	closeWriter(t, w)
	if n, twice := f.stored(); n != 35 || twice != 0 {
		t.Fatalf("stored %d records (%d twice), want 35 once each", n, twice)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sizes {
		if s > 10 {
			t.Fatalf("batch sizes %v: one exceeds Batch 10", f.sizes)
		}
	}
}

func TestWriterCloseFlushesBuffered(t *testing.T) {
	clk := fakeclock.New()
	f := newFake(0)
	w := ledger.NewWriter(f, ledger.WriterOptions{Batch: 500, Every: time.Hour, Clock: clk})
	for i := range 1234 {
		w.Add(usage(i))
	}
	closeWriter(t, w)
	if n, twice := f.stored(); n != 1234 || twice != 0 {
		t.Fatalf("after Close, stored %d (%d twice), want 1234 once each", n, twice)
	}
	w.Add(usage(9999))
	if d := w.Dropped(); d != 1 {
		t.Fatalf("Dropped after an Add past Close = %d, want 1", d)
	}
}

func TestWriterDropsWhenFull(t *testing.T) {
	clk := fakeclock.New()
	f := newFake(1 << 30) // the store never works
	var mu sync.Mutex
	reported := 0
	w := ledger.NewWriter(f, ledger.WriterOptions{
		Buffer: 100, Batch: 10, Every: time.Second, MinBackoff: time.Second, Clock: clk,
		OnDrop: func(n int) { mu.Lock(); reported += n; mu.Unlock() },
	})
	for i := range 150 {
		w.Add(usage(i)) // never blocks, store down or not
	}
	if d, p := w.Dropped(), w.Pending(); d != 50 || p != 100 {
		t.Fatalf("Dropped, Pending = %d, %d; want 50, 100 (Buffer)", d, p)
	}
	f.next(t) // the kick's failed write
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // give up at once
	err := w.Close(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with the store down = %v, want an error wrapping context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if reported != 150 || w.Dropped() != 150 {
		t.Fatalf("OnDrop heard of %d, Dropped = %d; want 150 (50 on a full buffer, 100 unwritten at Close)", reported, w.Dropped())
	}
}

func TestWriterRetriesWithBackoffAndLosesNothing(t *testing.T) {
	clk := fakeclock.New()
	f := newFake(3)
	var mu sync.Mutex
	var errs []error
	w := ledger.NewWriter(f, ledger.WriterOptions{
		Batch: 10, Every: time.Second, MinBackoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, Clock: clk,
		OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
		OnDrop:  func(n int) { t.Errorf("dropped %d", n) },
	})
	for i := range 5 {
		w.Add(usage(i))
	}
	block(t, clk, time.Second)
	clk.Advance(time.Second)
	if err := f.next(t); err == nil {
		t.Fatal("first write succeeded, want the fake's failure")
	}
	// Backoff 100 ms, 200 ms, then capped at 300 ms; records added
	// meanwhile wait with the held batch.
	for i, d := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond} {
		block(t, clk, d)
		w.Add(usage(100 + i))
		clk.Advance(d)
		err := f.next(t)
		if (i < 2) != (err != nil) {
			t.Fatalf("retry %d: err %v; want failures for the first two retries only", i+1, err)
		}
	}
	for n, _ := f.stored(); n < 5; n, _ = f.stored() {
		f.next(t)
	}
	closeWriter(t, w)
	if n, twice := f.stored(); n != 8 || twice != 0 {
		t.Fatalf("stored %d records (%d twice), want 8 once each", n, twice)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 3 {
		t.Fatalf("OnError called %d times, want 3", len(errs))
	}
}

func TestWriterDropsInvalidBatches(t *testing.T) {
	f := &invalidRecorder{}
	dropped := make(chan int, 10)
	w := ledger.NewWriter(f, ledger.WriterOptions{Batch: 2, Clock: fakeclock.New(), OnDrop: func(n int) { dropped <- n }})
	w.Add(usage(1))
	w.Add(usage(2))
	var n int
	select {
	case n = <-dropped:
	case <-time.After(10 * time.Second):
		t.Fatal("OnDrop not called within 10 s")
	}
	if n != 2 {
		t.Fatalf("OnDrop(%d), want 2: a batch refused as invalid is dropped, not retried", n)
	}
	closeWriter(t, w)
}

type invalidRecorder struct{}

func (invalidRecorder) RecordUsage(context.Context, []ledger.Usage) error {
	return fmt.Errorf("%w: test", ledger.ErrInvalid)
}

func TestWriterFillsRequestIDAndTime(t *testing.T) {
	f := newFake(0)
	clk := fakeclock.New()
	w := ledger.NewWriter(f, ledger.WriterOptions{Clock: clk})
	w.Add(ledger.Usage{})
	w.Add(ledger.Usage{})
	closeWriter(t, w)
	if n, _ := f.stored(); n != 2 {
		t.Fatalf("stored %d distinct request IDs, want 2", n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, at := range f.at {
		if !at.Equal(clk.Now()) {
			t.Fatalf("a record without At was stored at %v, want the clock's %v", at, clk.Now())
		}
	}
	if len(f.at) != 2 {
		t.Fatalf("%d times recorded, want 2", len(f.at))
	}
}

func BenchmarkWriterAdd(b *testing.B) {
	w := ledger.NewWriter(newDiscard(), ledger.WriterOptions{})
	defer w.Close(context.Background())
	u := ledger.Usage{RequestID: "r", KeyID: "key_x", Model: "gpt-4o", PromptTokens: 100}
	b.ReportAllocs()
	for b.Loop() {
		w.Add(u)
	}
}

type discard struct{}

func newDiscard() discard { return discard{} }

func (discard) RecordUsage(context.Context, []ledger.Usage) error { return nil }

// fullDisks are stores on a full disk: open returns a store whose every
// write of usage fails, the text its error has, and the function that
// makes room again.
var fullDisks = []struct {
	name string
	open func(t *testing.T) (s ledger.Store, errText string, room func())
}{
	// SQLite answers SQLITE_FULL ("database or disk is full") when its
	// file may not grow, which is what a full disk makes of every write.
	{"sqlite", func(t *testing.T) (ledger.Store, string, func()) {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		db := ledger.WriterDB(s) // one connection: the pragma holds for every write
		var pages int
		if err := db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
			t.Fatal(err)
		}
		return s, "full", func() {
			if _, err := db.Exec("PRAGMA max_page_count = 1073741823"); err != nil {
				t.Fatal(err)
			}
		}
	}},
	// PostgreSQL answers SQLSTATE 53100 (disk_full) to every insert.
	{"postgres", func(t *testing.T) (ledger.Store, string, func()) {
		dsn := pgtest.Shared(t)
		s, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, "53100", pgtest.FailWrites(t, dsn, "usage_requests")
	}},
}

// TestWriterOnAFullDisk, on SQLite and PostgreSQL: on a full disk every
// write fails. The writer keeps the records and retries; once there is
// room they are all stored, once each, and nothing was dropped.
func TestWriterOnAFullDisk(t *testing.T) {
	for _, fd := range fullDisks {
		t.Run(fd.name, func(t *testing.T) {
			s, errText, room := fd.open(t)
			testWriterOnAFullDisk(t, s, errText, room)
		})
	}
}

func testWriterOnAFullDisk(t *testing.T, s ledger.Store, errText string, room func()) {
	ctx := context.Background()
	clk := fakeclock.New()
	failed := make(chan error, 100)
	written := make(chan int, 100)
	w := ledger.NewWriter(s, ledger.WriterOptions{
		Batch: 1000, Every: time.Second, MinBackoff: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Clock: clk,
		OnError:   func(err error) { failed <- err },
		OnWritten: func(b []ledger.Usage) { written <- len(b) },
		OnDrop:    func(n int) { t.Errorf("dropped %d", n) },
	})
	now := time.Now()
	const n = 300
	for i := range n {
		u := usage(i)
		u.At, u.KeyID, u.Cost = now, "key_a", 0.001
		w.Add(u)
	}
	block(t, clk, time.Second)
	clk.Advance(time.Second)
	select {
	case err := <-failed:
		if !strings.Contains(err.Error(), errText) {
			t.Fatalf("the write failed with %v, want the store's disk full (%q)", err, errText)
		}
	case n := <-written:
		t.Fatalf("%d records written to a database that may not grow", n)
	case <-time.After(10 * time.Second): // a guard against a hang
		t.Fatal("no write attempt")
	}
	if w.Pending() != n {
		t.Fatalf("%d records pending after the failed write, want %d", w.Pending(), n)
	}
	// Room again: the held batch goes in on the next retry.
	room()
	got := 0
	for got < n {
		block(t, clk, 100*time.Millisecond)
		clk.Advance(100 * time.Millisecond)
		select {
		case k := <-written:
			got += k
		case <-failed:
		case <-time.After(10 * time.Second):
			t.Fatal("no retry")
		}
	}
	closeWriter(t, w)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	rows, err := s.Spend(ctx, ledger.SpendQuery{From: day.AddDate(0, 0, -1), To: day.AddDate(0, 0, 2), Key: "key_a"})
	if err != nil || len(rows) != 1 || rows[0].Requests != n {
		t.Fatalf("stored %+v (%v), want %d requests", rows, err, n)
	}
}
