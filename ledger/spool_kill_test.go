package ledger_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// The kill test's child: a writer with a spool, recording usage from 16
// goroutines and printing "answered <id>" once Add returned for it, as
// the gateway writes a request's log line once its usage is recorded. It
// runs until the parent kills it.
const childEnv = "SWITCHOVER_SPOOL_CHILD"

func openStore(t testing.TB, kind, dsn string) ledger.Store {
	t.Helper()
	var s ledger.Store
	var err error
	if kind == "sqlite" {
		s, err = sqlite.Open(context.Background(), dsn)
	} else {
		s, err = postgres.Open(context.Background(), dsn)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSpoolChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("the child of TestSpoolKillLosesNothing")
	}
	kind, dsn, path := os.Getenv(childEnv), os.Getenv(childEnv+"_DSN"), os.Getenv(childEnv+"_SPOOL")
	store := openStore(t, kind, dsn)
	sp, replay, err := ledger.OpenSpool(path)
	if err != nil {
		t.Fatal(err)
	}
	// Small batches written often: at the kill some records are stored,
	// some are being written and some wait.
	w := ledger.NewWriter(store, ledger.WriterOptions{Spool: sp, Replay: replay, Batch: 7, Every: 20 * time.Millisecond})
	var out sync.Mutex
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("kill-%d-%d", g, i)
				w.Add(ledger.Usage{RequestID: id, KeyID: id, At: time.Now(), PromptTokens: 10, Cost: 0.001})
				out.Lock()
				fmt.Printf("answered %s\n", id)
				out.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestSpoolKillLosesNothing is the regression test of issue 24's "a
// SIGKILL under load lost 12 of 126 usage records": a child process
// records usage through a spooled writer and is killed; the next start
// replays the spool, and every record the child answered is stored
// exactly once.
func TestSpoolKillLosesNothing(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			dsn := filepath.Join(dir, "ledger.db")
			if kind == "postgres" {
				dsn = pgtest.Shared(t)
			}
			spool := filepath.Join(dir, "usage.spool")
			openStore(t, kind, dsn).Close() // migrate before the child races
			answered := runAndKill(t, kind, dsn, spool, 300)

			store := openStore(t, kind, dsn)
			defer store.Close()
			sp, replay, err := ledger.OpenSpool(spool)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d answered; %d records replayed from the spool", len(answered), len(replay))
			w := ledger.NewWriter(store, ledger.WriterOptions{Spool: sp, Replay: replay})
			if err := w.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkOnce(t, store, answered)
			if sp2, left, err := ledger.OpenSpool(spool); err != nil || len(left) != 0 {
				t.Fatalf("spool after the replay: %d records, %v; want it empty", len(left), err)
			} else {
				sp2.Close()
			}
		})
	}
}

// runAndKill starts the child, kills it with SIGKILL once it answered n
// records, and returns the records it answered.
func runAndKill(t *testing.T, kind, dsn, spool string, n int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpoolChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+kind, childEnv+"_DSN="+dsn, childEnv+"_SPOOL="+spool)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var answered []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "answered "); ok {
			answered = append(answered, id)
			if len(answered) == n {
				cmd.Process.Kill()
			}
		}
	}
	// Lines printed before the kill landed count too: they were answered.
	cmd.Wait()
	if len(answered) < n {
		t.Fatalf("the child answered %d records, want %d", len(answered), n)
	}
	return answered
}

// checkOnce checks that store holds each of ids exactly once, in its
// per-request rows and in its daily aggregate, and nothing else.
func checkOnce(t *testing.T, store ledger.Store, ids []string) {
	t.Helper()
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	for _, q := range []ledger.SpendQuery{
		{From: day.Add(-24 * time.Hour), To: day.Add(48 * time.Hour), By: []string{ledger.ByKey}}, // daily aggregate
		{From: now.Add(-time.Hour), To: now.Add(time.Hour), By: []string{ledger.ByKey}},           // per-request rows
	} {
		rows, err := store.Spend(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, r := range rows {
			got[r.Key] = r.Requests
		}
		for _, id := range ids {
			if got[id] != 1 {
				t.Errorf("%s: answered record %s stored %d times, want 1", q.From, id, got[id])
			}
		}
		if t.Failed() {
			return
		}
	}
}
