// Package postgres opens a ledger.Store in a PostgreSQL database, for
// several replicas sharing one store. It holds the PostgreSQL driver
// (github.com/jackc/pgx/v5), so that only the programs that open a store
// by configuration link it, not the packages that merely use a
// ledger.Store.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/switchover-gw/switchover/ledger"
)

var dialect = ledger.Dialect{
	Name:   "postgres",
	Dollar: true,
	// Any constant will do, as long as nothing else in the database uses
	// it: "switchover ledger" in ASCII.
	MigrateLock: `SELECT pg_advisory_xact_lock(7310857318723601)`,
	IsUnique: func(err error) bool {
		var e *pgconn.PgError
		return errors.As(err, &e) && e.Code == "23505" // unique_violation
	},
}

// Open connects to the PostgreSQL database named by dsn (a URL,
// postgres://user:pass@host:port/db?sslmode=…, or key=value pairs) and
// applies the migrations it lacks. Several replicas may share one
// database: migrations take an advisory lock, so replicas starting
// together apply them once. The Store is safe for concurrent use.
func Open(ctx context.Context, dsn string) (ledger.Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: open postgres: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: open postgres: %w", err)
	}
	if err := ledger.Migrate(ctx, db, dialect, time.Now()); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: open postgres: %w", err)
	}
	return ledger.NewSQLStore(db, db, dialect), nil
}
