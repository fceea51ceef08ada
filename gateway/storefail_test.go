package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
	"github.com/switchover-gw/switchover/sim"
)

// fullDisk is a store on a full disk: reads work, every write fails.
type fullDisk struct{ ledger.Store }

var errFull = errors.New("database or disk is full")

func (fullDisk) RecordUsage(context.Context, []ledger.Usage) error { return errFull }

// unwritableStores are the stores whose reads work and every write of
// usage fails, as on a full disk: open returns the store's entry
// in the store block ("sqlite: ...") and the store to give the gateway.
var unwritableStores = []struct {
	name string
	open func(t *testing.T) (setting string, s ledger.Store)
}{
	{"sqlite", func(t *testing.T) (string, ledger.Store) {
		db := filepath.Join(t.TempDir(), "switchover.db")
		s, err := sqlite.Open(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return fmt.Sprintf("sqlite: %q", db), fullDisk{s}
	}},
	// The server's own disk_full error, on every insert of usage.
	{"postgres", func(t *testing.T) (string, ledger.Store) {
		dsn := pgtest.Shared(t)
		s, err := postgres.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		pgtest.FailWrites(t, dsn, "usage_requests")
		return fmt.Sprintf("postgres: %q", dsn), s
	}},
}

// TestShutdownWithAnUnwritableStore is the regression test of issue 24's
// "at shutdown with an unwritable store the buffered records are dropped
// after the grace with no log line", on SQLite and PostgreSQL: without a
// spool every record is counted (switchover_usage_dropped_total) and
// logged; with one, each is left in the spool and stored by the next
// start. Meanwhile the store reads down, in the metric and the status,
// although its reads work.
func TestShutdownWithAnUnwritableStore(t *testing.T) {
	for _, st := range unwritableStores {
		for _, spooled := range []bool{false, true} {
			t.Run(fmt.Sprint(st.name, "/spool=", spooled), func(t *testing.T) {
				t.Parallel() // each waits on the writer's retries and a shutdown grace
				setting, store := st.open(t)
				testShutdownWithAnUnwritableStore(t, setting, store, spooled)
			})
		}
	}
}

func testShutdownWithAnUnwritableStore(t *testing.T, setting string, store ledger.Store, spooled bool) {
	dir := t.TempDir()
	spool := "off"
	if spooled {
		spool = filepath.Join(dir, "usage.spool")
	}
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Deployments: []sim.Deployment{
		{Name: "weu", Flavour: sim.Azure, Deployment: "chat", Model: "gpt-4o-2024-08-06"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	y := fmt.Sprintf(`server: {drain_delay: 0s, shutdown_grace: 1s}
object_ids: {secret: `+ownerSecret+`}
store: {%s, spool: %q, refresh: 200ms}
backends:
  - {name: weu, type: azure, url: %q}
pools:
  - name: chat
    members: [{backend: weu}]
`, setting, spool, s.Deployments()[0].URL)
	cfg, err := config.Parse("t.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := ledger.NewKey(t.Context(), store, ledger.Key{Name: "app"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(logs, "json", "info"), Ledger: store})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	const n = 3
	for range n {
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/chat/completions",
			strings.NewReader(`{"model":"chat","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	// The writes fail and the reads (every 200ms) work: down, and
	// still down after several refreshes.
	poll.Until(t, 30*time.Second, func() bool {
		return strings.Count(logs.String(), "usage store: write failed") >= 2
	}, func() string { return "the writer did not fail twice:\n" + logs.String() })
	if m := scrape(t, g); !strings.Contains(m, "\nswitchover_store_up 0") {
		t.Errorf("switchover_store_up is not 0 while every write fails")
	}
	if st := g.Status().Store; st == nil || st.Up {
		t.Errorf("the status says the store is up while every write fails: %+v", st)
	}
	cancel()
	<-done
	m := scrape(t, g)
	if spooled {
		if !strings.Contains(logs.String(), "they wait in the spool for the next start") {
			t.Errorf("no log line of the records left in the spool:\n%s", logs.String())
		}
		if !strings.Contains(m, "\nswitchover_usage_dropped_total 0") {
			t.Errorf("records counted as dropped though they are in the spool:\n%s", grepLines(m, "dropped"))
		}
		sp, recs, err := ledger.OpenSpool(spool)
		if err != nil || len(recs) != n {
			t.Fatalf("spool after the shutdown: %d records, %v; want %d", len(recs), err, n)
		}
		sp.Close()
		return
	}
	if !strings.Contains(logs.String(), `"msg":"usage store: records dropped, never to be stored","records":3`) {
		t.Errorf("no log line of the %d records dropped:\n%s", n, logs.String())
	}
	if !strings.Contains(m, fmt.Sprintf("\nswitchover_usage_dropped_total %d", n)) {
		t.Errorf("switchover_usage_dropped_total is not %d:\n%s", n, grepLines(m, "dropped"))
	}
}

func grepLines(s, word string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
