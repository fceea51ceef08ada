package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
)

func spooled(i int) ledger.Usage {
	id := fmt.Sprintf("sp-%d", i)
	return ledger.Usage{RequestID: id, KeyID: id, At: time.Now(), PromptTokens: 3, Cost: 0.002}
}

// writeSpool writes recs as a spool file at path, as a process killed
// before storing them would have left it.
func writeSpool(t *testing.T, path string, recs []ledger.Usage) {
	t.Helper()
	sp, _, err := ledger.OpenSpool(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range recs {
		if err := sp.Append(u); err != nil {
			t.Fatal(err)
		}
	}
	sp.Close()
}

// replay starts a writer on the spool at path, as the gateway does at
// start, and closes it once everything is stored.
func replay(t *testing.T, store ledger.Recorder, path string) int {
	t.Helper()
	sp, recs, err := ledger.OpenSpool(path)
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewWriter(store, ledger.WriterOptions{Spool: sp, Replay: recs})
	closeWriter(t, w)
	return len(recs)
}

// TestSpoolReplayIsIdempotent replays a spool whose records were partly
// stored already (the process died after a batch was written and before
// the spool was emptied), and then the same spool again: each record is
// stored once, in the rows and in the daily aggregate.
func TestSpoolReplayIsIdempotent(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			dsn := filepath.Join(dir, "ledger.db")
			if kind == "postgres" {
				dsn = pgtest.Shared(t)
			}
			store := openStore(t, kind, dsn)
			defer store.Close()
			var recs []ledger.Usage
			var ids []string
			for i := range 20 {
				recs = append(recs, spooled(i))
				ids = append(ids, recs[i].RequestID)
			}
			if err := store.RecordUsage(context.Background(), recs[:10]); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "usage.spool")
			for range 2 {
				writeSpool(t, path, recs)
				if n := replay(t, store, path); n != 20 {
					t.Fatalf("replayed %d records, want 20", n)
				}
			}
			checkOnce(t, store, ids)
		})
	}
}

// TestSpoolCutsATornLastLine: a process killed while writing a line
// leaves part of it; the records before it are replayed, and lines
// appended afterwards are whole.
func TestSpoolCutsATornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	writeSpool(t, path, []ledger.Usage{spooled(0), spooled(1)})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"at":"2026-12-02T05:00:00Z","request_id":"sp-`)
	f.Close()
	sp, recs, err := ledger.OpenSpool(path)
	if err != nil || len(recs) != 2 {
		t.Fatalf("OpenSpool: %d records, %v; want 2", len(recs), err)
	}
	if err := sp.Append(spooled(2)); err != nil {
		t.Fatal(err)
	}
	sp.Close()
	sp, recs, err = ledger.OpenSpool(path)
	if err != nil || len(recs) != 3 || recs[2].RequestID != "sp-2" {
		t.Fatalf("after an append: %d records, %v; want sp-0..sp-2", len(recs), err)
	}
	sp.Close()
}

// TestWriterLeavesUnstoredRecordsInTheSpoolAtClose is the regression test
// of issue 24's "at shutdown with an unwritable store the buffered
// records are dropped": with a spool they stay in it, not counted as
// dropped, and Close says how many.
func TestWriterLeavesUnstoredRecordsInTheSpoolAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	sp, _, err := ledger.OpenSpool(path)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(1 << 30) // every write fails
	w := ledger.NewWriter(f, ledger.WriterOptions{Spool: sp, Every: time.Millisecond})
	for i := range 5 {
		w.Add(spooled(i))
	}
	if err := f.next(t); err == nil {
		t.Fatal("the failing store took a write")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the grace is over
	err = w.Close(ctx)
	if !errors.Is(err, ledger.ErrSpooled) {
		t.Fatalf("Close = %v, want ErrSpooled", err)
	}
	if d := w.Dropped(); d != 0 {
		t.Errorf("Dropped = %d, want 0: the records are in the spool", d)
	}
	sp, recs, err := ledger.OpenSpool(path)
	if err != nil || len(recs) != 5 {
		t.Fatalf("spool after Close: %d records, %v; want 5", len(recs), err)
	}
	sp.Close()
}

// TestWriterKeepsTheSpoolShort: under steady traffic the writer is rarely
// idle, so the spool is rewritten to the records not yet stored, not
// left to grow.
func TestWriterKeepsTheSpoolShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.spool")
	sp, _, err := ledger.OpenSpool(path)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(0)
	w := ledger.NewWriter(f, ledger.WriterOptions{Spool: sp, Batch: 10, Every: time.Hour})
	most := 0
	for i := range 1000 {
		w.Add(spooled(i))
		most = max(most, sp.Lines())
	}
	closeWriter(t, w)
	if n, twice := f.stored(); n != 1000 || twice != 0 {
		t.Fatalf("stored %d (%d twice), want 1000 once", n, twice)
	}
	if most > 500 {
		t.Errorf("the spool held up to %d lines while 1000 records passed in batches of 10", most)
	}
	sp, recs, err := ledger.OpenSpool(path)
	if err != nil || len(recs) != 0 {
		t.Fatalf("spool after Close: %d records, %v; want none", len(recs), err)
	}
	sp.Close()
}
