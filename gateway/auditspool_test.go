package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// auditDown is a store whose writes of the audit trail fail while down
// is set (a full disk, as far as the trail goes); everything else works.
type auditDown struct {
	ledger.Store
	down *atomic.Bool
}

func (s auditDown) RecordAudit(ctx context.Context, e ledger.AuditEntry) error {
	return s.RecordAudits(ctx, []ledger.AuditEntry{e})
}

func (s auditDown) RecordAudits(ctx context.Context, b []ledger.AuditEntry) error {
	if s.down.Load() {
		return errFull
	}
	return s.Store.(ledger.AuditWriter).RecordAudits(ctx, b)
}

func (s auditDown) Audit(ctx context.Context, q ledger.AuditQuery) ([]ledger.AuditEntry, error) {
	return s.Store.(ledger.AuditReader).Audit(ctx, q)
}

// TestAuditTrailSurvivesStoreOutageAndRestart (issue 29 §5, "entries
// queued while the store is down are lost"): on SQLite and PostgreSQL, an
// admin action while the store refuses the trail's writes waits in the
// audit spool through a shutdown; the next start, the store still down,
// replays it and keeps retrying with its own new action; once the store
// works, GET /admin/audit lists both, once each, and no entry was dropped.
func TestAuditTrailSurvivesStoreOutageAndRestart(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			var store ledger.Store
			var setting string
			var breakTrail func() (restore func())
			if kind == "sqlite" {
				db := filepath.Join(dir, "switchover.db")
				s, err := sqlite.Open(t.Context(), db)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				down := &atomic.Bool{}
				store, setting = auditDown{s, down}, fmt.Sprintf("sqlite: %q", db)
				breakTrail = func() func() { down.Store(true); return func() { down.Store(false) } }
			} else {
				dsn := pgtest.Start(t)
				s, err := postgres.Open(t.Context(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				store, setting = s, fmt.Sprintf("postgres: %q", dsn)
				breakTrail = func() func() { return pgtest.FailWrites(t, dsn, "audit") }
			}
			spool := filepath.Join(dir, "usage.spool")
			mod := func(y string) string {
				return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+"}\nstore: {"+setting+", spool: "+spool+"}\nkeys:", 1)
			}
			restore := breakTrail()
			a := startWith(t, gateway.Options{Ledger: store}, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "", mod)
			if st, b := a.adminCall("POST", "/admin/backends/aoai-swedencentral/drain", "", adminKey, gateway.ActorHeader, "alice"); st != http.StatusOK {
				t.Fatalf("drain: %d %s", st, b)
			}
			poll.Until(t, 30*time.Second, func() bool { return strings.Contains(a.logs.String(), "audit trail: write failed") },
				func() string { return "the trail's write did not fail:\n" + a.logs.String() })
			// Stop, advancing the gateway's clock until the shutdown's grace
			// (5 s) is over, whatever timers are armed meanwhile.
			a.stop()
			poll.Until(t, 60*time.Second, func() bool {
				a.clock.Advance(time.Second)
				select {
				case err := <-a.done:
					a.done <- err
					return true
				default:
					return false
				}
			}, func() string { return "the gateway did not stop:\n" + a.logs.String() })
			if !strings.Contains(a.logs.String(), "they wait in the audit spool for the next start") {
				t.Fatalf("no log line of the entries left in the audit spool:\n%s", a.logs.String())
			}

			b2 := startWith(t, gateway.Options{Ledger: store}, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "", mod)
			b2.clock.Advance(time.Minute) // each harness's clock starts at the same instant
			if st, b := b2.adminCall("POST", "/admin/backends/aoai-swedencentral/restore", "", adminKey, gateway.ActorHeader, "bob"); st != http.StatusOK {
				t.Fatalf("restore: %d %s", st, b)
			}
			poll.Until(t, 30*time.Second, func() bool { return strings.Contains(b2.logs.String(), "audit trail: write failed") },
				func() string { return "the trail's write did not fail after the restart:\n" + b2.logs.String() })
			restore()
			var got auditAnswer
			poll.Until(t, 30*time.Second, func() bool {
				b2.clock.Advance(time.Second) // the writer's backoff runs on the gateway's clock
				st, b := b2.adminCall("GET", "/admin/audit?from=2000-01-01T00:00:00Z", "", adminKey)
				got = auditAnswer{}
				return st == http.StatusOK && json.Unmarshal(b, &got) == nil && len(got.Entries) >= 2
			}, func() string { return fmt.Sprintf("the trail: %+v", got) })
			var lines []string
			for _, e := range got.Entries {
				lines = append(lines, e.Action+" "+e.Target+" by "+e.Actor)
			}
			want := []string{"admin:restore aoai-swedencentral by admin key (as bob) from 127.0.0.1", "admin:drain aoai-swedencentral by admin key (as alice) from 127.0.0.1"}
			if strings.Join(lines, "|") != strings.Join(want, "|") {
				t.Fatalf("the trail after the outage:\n got %q\nwant %q", lines, want)
			}
			if logs := a.logs.String() + b2.logs.String(); strings.Contains(logs, "entries dropped") || strings.Contains(logs, "they are lost") {
				t.Fatalf("audit entries were dropped:\n%s", grepLines(logs, "audit"))
			}
		})
	}
}

// TestAuditRetentionByDefault: with a store and no setting, the
// retention job deletes the audit entries older than 400 days (and only
// those) at start, while store.retention, unset, keeps every request.
func TestAuditRetentionByDefault(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	s, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	now := fakeclock.New().Now() // where the harness's clock starts
	w := s.(ledger.AuditWriter)
	for _, d := range []int{500, 401, 399} {
		if err := w.RecordAudit(t.Context(), ledger.AuditEntry{At: now.AddDate(0, 0, -d), Actor: "alice", Action: "admin:drain", Target: fmt.Sprint(d)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordUsage(t.Context(), []ledger.Usage{{At: now.AddDate(0, 0, -500), RequestID: "ancient", KeyID: "k"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	a := startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+"}\nstore: {sqlite: "+db+"}\nkeys:", 1)
	})
	poll.Until(t, 30*time.Second, func() bool {
		return strings.Contains(a.logs.String(), `"msg":"audit retention: deleted audit entries older than store.audit_retention","deleted":2`)
	}, func() string { return "no audit retention round:\n" + a.logs.String() })
	st, b := a.adminCall("GET", "/admin/audit?from=2000-01-01T00:00:00Z", "", adminKey)
	var got auditAnswer
	if st != http.StatusOK || json.Unmarshal(b, &got) != nil || len(got.Entries) != 1 || got.Entries[0].Target != "399" {
		t.Fatalf("the trail after the retention: %d %s; want the entry of 399 days ago only", st, b)
	}
	if reqs, err := a.gw.Ledger().Requests(t.Context(), ledger.RequestQuery{Limit: 10}); err != nil || len(reqs) != 1 {
		t.Fatalf("requests after an audit retention round: %d, %v; want the 500-day-old one kept", len(reqs), err)
	}
}
