package ledger_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// TestSQLiteReopenKeepsDataAndMigratesOnce: a second Open finds the schema
// at its version, applies nothing again, and sees the data.
func TestSQLiteReopenKeepsDataAndMigratesOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	k, secret, err := ledger.NewKey(ctx, s, ledger.Key{Name: "a"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if got, err := ledger.Verify(ctx, s, secret, time.Now()); err != nil || got.ID != k.ID {
		t.Fatalf("Verify after reopen = %v, %v", got.ID, err)
	}
	db := ledger.WriterDB(s)
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil || n != ledger.Migrations("sqlite") {
		t.Fatalf("schema_migrations has %d rows (%v), want %d", n, err, ledger.Migrations("sqlite"))
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q (%v), want wal", mode, err)
	}
}

func TestSQLiteRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.WriterDB(s).ExecContext(ctx, "INSERT INTO schema_migrations VALUES (9999, '9999_future.sql', 0)"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := sqlite.Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("sqlite.Open on a schema from a newer switchover = %v, want a refusal", err)
	}
}

// TestPostgresReplicasMigrateTogether: replicas opening one empty
// database at once apply the migrations once, none failing.
func TestPostgresReplicasMigrateTogether(t *testing.T) {
	dsn := pgtest.Start(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(context.Background(), dsn)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil || n != ledger.Migrations("postgres") {
		t.Fatalf("schema_migrations has %d rows (%v), want %d", n, err, ledger.Migrations("postgres"))
	}
}

// TestSQLiteUpgradesAVersion1Database: a database made before keys had a
// patience (schema version 1, with a key in it) is migrated on open, and
// its key reads with the pool's patience.
func TestSQLiteUpgradesAVersion1Database(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	k, secret, err := ledger.NewKey(ctx, s, ledger.Key{Name: "old"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Usage from before tags existed.
	old := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	if err := s.RecordUsage(ctx, []ledger.Usage{{At: old, RequestID: "r0", KeyID: k.ID, PromptTokens: 5, Cost: 0.5}}); err != nil {
		t.Fatal(err)
	}
	// Back to version 1: without the columns and tables of versions 2
	// (patience), 3 (estimated usage), 4 (a rotated secret's grace), 5
	// (object owners), 6 (tags), 7 (end users), 8 (budget rules), 9
	// (cache hits), 10 (keys' own cache), 11 (the request log), 12 (the
	// audit trail), 13 (kept bodies), 14 (traffic sums) and 15 (keys' own
	// request log), and their migrations' rows.
	db := ledger.WriterDB(s)
	for _, q := range []string{"DROP TABLE traffic_daily", "DROP TABLE request_bodies", "DROP TABLE audit", "DROP TABLE usage_attempts", "DROP INDEX usage_requests_model_at", "DROP INDEX usage_requests_pool_at",
		"DROP INDEX usage_requests_status_at", "DROP INDEX usage_requests_failover_at", "DROP INDEX usage_requests_cache_at",
		"ALTER TABLE usage_requests DROP COLUMN attempts", "ALTER TABLE usage_requests DROP COLUMN tried",
		"ALTER TABLE usage_requests DROP COLUMN hedge", "ALTER TABLE usage_requests DROP COLUMN duration_ms",
		"ALTER TABLE usage_requests DROP COLUMN first_byte_ms", "ALTER TABLE usage_requests DROP COLUMN unanswered",
		"DROP TABLE usage_tags", "DROP TABLE usage_daily_tags", "DROP INDEX usage_requests_at_id",
		"ALTER TABLE api_keys DROP COLUMN tags", "ALTER TABLE api_keys DROP COLUMN metadata", "ALTER TABLE usage_requests DROP COLUMN tags",
		"DROP INDEX api_keys_prev_prefix", "ALTER TABLE api_keys DROP COLUMN prev_prefix",
		"ALTER TABLE api_keys DROP COLUMN prev_hash", "ALTER TABLE api_keys DROP COLUMN prev_until_us",
		"ALTER TABLE api_keys DROP COLUMN patience_ms", "ALTER TABLE usage_requests DROP COLUMN estimated",
		"DROP TABLE object_owners", "DROP TABLE budget_rules", "DROP INDEX usage_requests_end_user",
		"ALTER TABLE usage_requests DROP COLUMN end_user", "ALTER TABLE usage_requests DROP COLUMN cache",
		"ALTER TABLE usage_requests DROP COLUMN saved_nusd", "ALTER TABLE api_keys DROP COLUMN cache", "ALTER TABLE api_keys DROP COLUMN request_log",
		"DELETE FROM schema_migrations WHERE version >= 2"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("opening a version 1 database: %v", err)
	}
	defer s.Close()
	got, err := ledger.Verify(ctx, s, secret, time.Now())
	if err != nil || got.ID != k.ID || got.Patience != 0 || got.PrevPrefix != "" || !got.PrevUntil.IsZero() || got.Cache != nil || got.RequestLog != nil {
		t.Fatalf("the old key after the upgrade: %+v, %v", got, err)
	} // Version 3's column takes an estimated usage record, version 7's its end user.
	if err := s.RecordUsage(ctx, []ledger.Usage{{At: time.Now(), RequestID: "r1", KeyID: k.ID, PromptTokens: 3, Estimated: true, EndUser: "u1"},
		{At: time.Now(), RequestID: "r-hit", KeyID: k.ID, Cache: "hit", Saved: 0.25}}); err != nil {
		t.Fatalf("recording an estimated usage after the upgrade: %v", err)
	}
	rows, err := s.Spend(ctx, ledger.SpendQuery{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), EndUser: "u1"})
	if err != nil || len(rows) != 1 || rows[0].Requests != 1 {
		t.Fatalf("spend of the end user after the upgrade: %+v, %v", rows, err)
	}
	// Version 9's columns keep a cache hit's saving.
	hits, err := s.Requests(ctx, ledger.RequestQuery{Key: k.ID, Limit: 10})
	i := slices.IndexFunc(hits, func(u ledger.Usage) bool { return u.RequestID == "r-hit" })
	if err != nil || i < 0 || hits[i].Cache != "hit" || hits[i].Saved != 0.25 || hits[i].Cost != 0 {
		t.Fatalf("the cache hit after the upgrade: %+v, %v", hits, err)
	}
	// Version 11's columns and table keep a request's attempts.
	tried := ledger.Usage{At: time.Now(), RequestID: "r-tried", KeyID: k.ID, Backend: "b", Failover: true, Tried: 2,
		Attempts: []ledger.Attempt{{Backend: "a", Status: 429, Reason: "rate_limited"}, {Backend: "b", Status: 200, Reason: "ok"}}}
	if err := s.RecordUsage(ctx, []ledger.Usage{tried}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Requests(ctx, ledger.RequestQuery{Backend: "a", Limit: 10}); err != nil || len(got) != 1 || len(got[0].Attempts) != 2 {
		t.Fatalf("the request tried at a after the upgrade: %+v, %v", got, err)
	}
	// Version 6: the old key has no tags and takes some; the old usage
	// counts under the tag "" and a new tagged record under its tag.
	if got.Tags != nil || got.Metadata != nil {
		t.Fatalf("the old key has tags %q and metadata %q, want none", got.Tags, got.Metadata)
	}
	got.Tags, got.Metadata = []string{"prod"}, map[string]string{"owner": "ana"}
	off := false
	got.Cache = &cachepolicy.Policy{Coalesce: &off}      // version 10: a cache of its own, off
	got.RequestLog = &ledger.KeyRequestLog{Bodies: &off} // version 15: no bodies, whatever its pools say
	if err := s.UpdateKey(ctx, got); err != nil {
		t.Fatalf("tagging the old key after the upgrade: %v", err)
	}
	if again, err := ledger.Verify(ctx, s, secret, time.Now()); err != nil || again.Cache == nil || again.Cache.CoalesceOn() || again.Cache.TTL != 0 ||
		again.RequestLog == nil || again.RequestLog.Bodies == nil || *again.RequestLog.Bodies {
		t.Fatalf("the old key's cache and request log after the upgrade: %+v, %+v, %v", again.Cache, again.RequestLog, err)
	}
	if err := s.RecordUsage(ctx, []ledger.Usage{{At: old.Add(time.Hour), RequestID: "r2", KeyID: k.ID, Tags: got.Tags, PromptTokens: 7, Cost: 0.25}}); err != nil {
		t.Fatal(err)
	}
	day := old.Truncate(24 * time.Hour)
	rows, err = s.Spend(ctx, ledger.SpendQuery{From: day, To: day.Add(24 * time.Hour), By: []string{ledger.ByTag}})
	want := []ledger.SpendRow{{Requests: 1, PromptTokens: 5, Cost: 0.5}, {Tag: "prod", Requests: 1, PromptTokens: 7, Cost: 0.25}}
	if err != nil || !reflect.DeepEqual(rows, want) {
		t.Fatalf("spend by tag over the old day = %+v, %v; want %+v", rows, err, want)
	}
}

// TestPostgresUpgradesAVersion5Database: a PostgreSQL database made before
// tags (schema version 5, with usage in it) is migrated on open: its old
// usage counts under the tag "", and keys and records take tags.
func TestPostgresUpgradesAVersion5Database(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t)
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := ledger.NewKey(ctx, s, ledger.Key{Name: "old"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	old := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	if err := s.RecordUsage(ctx, []ledger.Usage{{At: old, RequestID: "r0", KeyID: k.ID, PromptTokens: 5, Cost: 0.5}}); err != nil {
		t.Fatal(err)
	}
	db := ledger.WriterDB(s)
	for _, q := range []string{"DROP TABLE traffic_daily", "DROP TABLE request_bodies", "DROP TABLE audit", "DROP TABLE usage_attempts", "DROP INDEX usage_requests_model_at", "DROP INDEX usage_requests_pool_at",
		"DROP INDEX usage_requests_status_at", "DROP INDEX usage_requests_failover_at", "DROP INDEX usage_requests_cache_at",
		"ALTER TABLE usage_requests DROP COLUMN attempts", "ALTER TABLE usage_requests DROP COLUMN tried",
		"ALTER TABLE usage_requests DROP COLUMN hedge", "ALTER TABLE usage_requests DROP COLUMN duration_ms",
		"ALTER TABLE usage_requests DROP COLUMN first_byte_ms", "ALTER TABLE usage_requests DROP COLUMN unanswered",
		"DROP TABLE usage_tags", "DROP TABLE usage_daily_tags", "DROP INDEX usage_requests_at_id",
		"ALTER TABLE api_keys DROP COLUMN tags", "ALTER TABLE api_keys DROP COLUMN metadata",
		"ALTER TABLE usage_requests DROP COLUMN tags", "DROP TABLE budget_rules", "DROP INDEX usage_requests_end_user",
		"ALTER TABLE usage_requests DROP COLUMN end_user", "ALTER TABLE usage_requests DROP COLUMN cache",
		"ALTER TABLE usage_requests DROP COLUMN saved_nusd", "ALTER TABLE api_keys DROP COLUMN cache", "ALTER TABLE api_keys DROP COLUMN request_log",
		"DELETE FROM schema_migrations WHERE version >= 6"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = postgres.Open(ctx, dsn); err != nil {
		t.Fatalf("opening a version 5 database: %v", err)
	}
	defer s.Close()
	ks, err := s.Keys(ctx)
	if err != nil || len(ks) != 1 || ks[0].Tags != nil || ks[0].Metadata != nil || ks[0].Cache != nil || ks[0].RequestLog != nil {
		t.Fatalf("the old key after the upgrade: %+v, %v", ks, err)
	}
	ks[0].Tags, ks[0].Metadata = []string{"prod"}, map[string]string{"owner": "ana"}
	ks[0].Cache = &cachepolicy.Policy{TTL: 10 * time.Minute, MaxEntry: 1 << 20} // version 10's column
	ks[0].RequestLog = &ledger.KeyRequestLog{MaxBodyBytes: 4096}                // version 15's
	if err := s.UpdateKey(ctx, ks[0]); err != nil {
		t.Fatalf("tagging the old key: %v", err)
	}
	if again, err := s.Keys(ctx); err != nil || len(again) != 1 || again[0].Cache == nil || again[0].Cache.TTL != 10*time.Minute || again[0].Cache.MaxEntry != 1<<20 ||
		again[0].RequestLog == nil || again[0].RequestLog.MaxBodyBytes != 4096 {
		t.Fatalf("the old key's cache and request log after the upgrade: %+v, %v", again, err)
	}
	if err := s.RecordUsage(ctx, []ledger.Usage{{At: old.Add(time.Hour), RequestID: "r1", KeyID: k.ID, Tags: []string{"prod"}, PromptTokens: 7, Cost: 0.25}}); err != nil {
		t.Fatal(err)
	}
	day := old.Truncate(24 * time.Hour)
	rows, err := s.Spend(ctx, ledger.SpendQuery{From: day, To: day.Add(24 * time.Hour), By: []string{ledger.ByTag}})
	want := []ledger.SpendRow{{Requests: 1, PromptTokens: 5, Cost: 0.5}, {Tag: "prod", Requests: 1, PromptTokens: 7, Cost: 0.25}}
	if err != nil || !reflect.DeepEqual(rows, want) {
		t.Fatalf("spend by tag over the old day = %+v, %v; want %+v", rows, err, want)
	}
}
