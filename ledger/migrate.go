package ledger

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migrations are numbered .sql files per dialect (0001_init.sql, …),
// applied in order by Migrate when a driver package opens a store, each
// once: the schema_migrations table records
// the versions applied. Never edit a released migration; add the next
// number, for both dialects.
//
//go:embed migrations
var migrationsFS embed.FS

type migration struct {
	version int64
	name    string
	sql     string
}

func migrations(d Dialect) ([]migration, error) {
	dir := path.Join("migrations", d.Name)
	entries, err := fs.ReadDir(migrationsFS, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("ledger: migration %s is not named NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(migrationsFS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// Migrate applies the migrations of dialect d that db lacks, in one
// transaction, recording now as the time each was applied. A database
// migrated by a newer switchover (a version this one does not know) is
// refused rather than used with a schema this code may misread. The
// driver packages call it when they open a store, before NewSQLStore.
func Migrate(ctx context.Context, db *sql.DB, d Dialect, now time.Time) error {
	ms, err := migrations(d)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	if d.MigrateLock != "" {
		if _, err := tx.ExecContext(ctx, d.MigrateLock); err != nil {
			return fmt.Errorf("ledger: migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_us BIGINT NOT NULL
)`); err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	var have int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	if latest := ms[len(ms)-1].version; have > latest {
		return fmt.Errorf("ledger: the database's schema is at version %d, newer than this switchover knows (%d): upgrade switchover", have, latest)
	}
	for _, m := range ms {
		if m.version <= have {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("ledger: migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, d.bind(`INSERT INTO schema_migrations (version, name, applied_us) VALUES (?, ?, ?)`),
			m.version, m.name, now.UnixMicro()); err != nil {
			return fmt.Errorf("ledger: migration %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	return nil
}
