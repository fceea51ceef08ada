package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
)

// testAuditLogSurvivesRestart: an AuditLog whose store fails keeps its
// entries in its spool; when the process stops with the store still down,
// the entries stay in the spool; the next start (the store still down)
// replays them, keeps retrying, and stores each once when the store
// works again, with the entries added meanwhile.
func testAuditLogSurvivesRestart(t *testing.T, h Harness) {
	s := h.Open(t)
	aw, ok := s.(ledger.AuditWriter)
	ar, ok2 := s.(ledger.AuditReader)
	if !ok || !ok2 {
		t.Fatal("the store does not keep an audit trail")
	}
	path := filepath.Join(t.TempDir(), "ledger.spool.audit")
	var failed atomic.Int64
	start := func(replay []ledger.AuditEntry, sp *ledger.AuditSpool) *ledger.AuditLog {
		return ledger.NewAuditLog(aw, ledger.BatchOptions[ledger.AuditEntry]{
			Spool: sp, Replay: replay, Batch: 10, Every: 5 * time.Millisecond, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
			Timeout: 5 * time.Second,
			OnError: func(err error) { failed.Add(1) },
			OnDrop:  func(n int) { t.Errorf("dropped %d audit entries", n) },
		})
	}
	entry := func(i int) ledger.AuditEntry {
		return ledger.AuditEntry{At: t0.Add(time.Duration(i) * time.Second), Actor: "alice", Action: "admin:drain", Target: fmt.Sprintf("b%d", i)}
	}

	// The first run: the store fails, 25 entries are added, the process
	// stops before the store comes back.
	sp, left, err := ledger.OpenAuditSpool(path)
	if err != nil || len(left) != 0 {
		t.Fatalf("OpenAuditSpool = %d entries, %v", len(left), err)
	}
	restore := h.Break(t, s)
	log := start(nil, sp)
	for i := range 25 {
		log.Add(entry(i))
	}
	poll.Until(t, 30*time.Second, func() bool { return failed.Load() > 0 }, func() string { return "no write failed" })
	gone, cancel := context.WithCancel(context.Background())
	cancel() // the shutdown's grace is over
	if err := log.Close(gone); !errors.Is(err, ledger.ErrSpooled) {
		t.Fatalf("Close with the store down = %v, want ErrSpooled", err)
	}

	// The restart, the store still down: the spool's entries are replayed
	// and wait with the new ones.
	sp, left, err = ledger.OpenAuditSpool(path)
	if err != nil || len(left) != 25 {
		t.Fatalf("after the restart the spool holds %d entries (%v), want 25", len(left), err)
	}
	failed.Store(0)
	log = start(left, sp)
	for i := 25; i < 30; i++ {
		log.Add(entry(i))
	}
	poll.Until(t, 30*time.Second, func() bool { return failed.Load() > 0 }, func() string { return "no write failed after the restart" })
	if p := log.Pending(); p != 30 {
		t.Fatalf("Pending = %d while the store is down, want 30", p)
	}
	restore()
	closeCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if err := log.Close(closeCtx); err != nil {
		t.Fatalf("Close once the store works: %v", err)
	}
	got, err := ar.Audit(context.Background(), ledger.AuditQuery{From: t0, To: t0.Add(time.Hour), Limit: 100})
	if err != nil || len(got) != 30 {
		t.Fatalf("the trail holds %d entries (%v), want 30", len(got), err)
	}
	for i, e := range got {
		if want := fmt.Sprintf("b%d", 29-i); e.Target != want || e.ID == "" {
			t.Errorf("entry %d: %+v, want target %s", i, e, want)
		}
	}
	if sp, left, err := ledger.OpenAuditSpool(path); err != nil || len(left) != 0 {
		t.Fatalf("after storing, the spool holds %d entries (%v), want none", len(left), err)
	} else {
		sp.Close()
	}
	// Storing the same entries again (a replay of a spool whose batch was
	// stored before it was emptied) adds none.
	if err := aw.RecordAudits(context.Background(), got); err != nil {
		t.Fatalf("RecordAudits of stored entries: %v", err)
	}
	if again, _ := ar.Audit(context.Background(), ledger.AuditQuery{From: t0, To: t0.Add(time.Hour), Limit: 100}); len(again) != 30 {
		t.Fatalf("after storing them again the trail holds %d entries, want 30", len(again))
	}
}

// testAuditRetention: a Retention with an AuditKeep deletes the audit
// entries older than it, in bounded batches, a round at a time, and
// leaves the requests alone when its Keep is 0 (request records kept
// forever); with a Keep too, each ages on its own setting.
func testAuditRetention(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	aw := s.(ledger.AuditWriter)
	now := t0.AddDate(1, 3, 0) // 2028-02-02 09:00
	ago := func(days int) time.Time { return now.AddDate(0, 0, -days) }
	for i, d := range []int{500, 450, 401, 399, 40, 0} {
		if err := aw.RecordAudit(ctx, ledger.AuditEntry{At: ago(d), Actor: "alice", Action: "signin", Target: fmt.Sprint(d), ID: fmt.Sprint("e", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordUsage(ctx, []ledger.Usage{{At: ago(500), RequestID: "ancient", KeyID: "A"}, {At: ago(40), RequestID: "recent", KeyID: "A"}}); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New()
	clk.Advance(now.Sub(clk.Now()))
	rounds := make(chan round, 10)
	keep := 400 * 24 * time.Hour
	r := ledger.NewRetention(s, ledger.RetentionOptions{AuditKeep: keep, Every: time.Hour, Batch: 2, MaxBatches: 1, Clock: clk,
		OnRound:      func(n int, before time.Time, err error) { t.Errorf("a round of requests with Keep 0: %d, %v", n, err) },
		OnAuditRound: func(n int, before time.Time, err error) { rounds <- round{n, before, err} }})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	if got := waitRound(t, rounds); got != (round{2, now.Add(-keep), nil}) {
		t.Fatalf("first audit round %+v, want 2 deleted before %s", got, now.Add(-keep))
	}
	waitTimer(t, clk, time.Hour)
	clk.Advance(time.Hour)
	if got := waitRound(t, rounds); got.deleted != 1 || got.err != nil {
		t.Fatalf("second audit round %+v, want 1 deleted", got)
	}
	all, err := s.(ledger.AuditReader).Audit(ctx, ledger.AuditQuery{From: ago(1000), To: now.Add(time.Hour), Limit: 100})
	var kept []string
	for _, e := range all {
		kept = append(kept, e.Target)
	}
	if err != nil || fmt.Sprint(kept) != "[0 40 399]" {
		t.Fatalf("the trail after retention: %v, %v; want the entries of 0, 40 and 399 days ago", kept, err)
	}
	if got := remaining(t, s); fmt.Sprint(got) != "[recent ancient]" {
		t.Fatalf("requests after an audit-only retention: %v, want both kept", got)
	}
	// With both settings, requests age on Keep and the trail on AuditKeep.
	both := ledger.NewRetention(s, ledger.RetentionOptions{Keep: 45 * 24 * time.Hour, AuditKeep: 30 * 24 * time.Hour, Clock: clk})
	if n, _, err := both.Round(ctx); n != 1 || err != nil {
		t.Fatalf("Round = %d, %v; want the 500-day-old request deleted", n, err)
	}
	if n, _, err := both.AuditRound(ctx); n != 2 || err != nil {
		t.Fatalf("AuditRound with 30 days = %d, %v; want the entries of 40 and 399 days ago deleted", n, err)
	}
}
