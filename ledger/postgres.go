package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

var postgresDialect = dialect{
	name:   "postgres",
	dollar: true,
	// Any constant will do, as long as nothing else in the database uses
	// it: "switchover ledger" in ASCII.
	migrateLock: `SELECT pg_advisory_xact_lock(7310857318723601)`,
	isUnique: func(err error) bool {
		var e *pgconn.PgError
		return errors.As(err, &e) && e.Code == "23505" // unique_violation
	},
}

// OpenPostgres connects to the PostgreSQL database named by dsn (a URL,
// postgres://user:pass@host:port/db?sslmode=…, or key=value pairs) and
// applies the migrations it lacks. Several replicas may share one
// database: migrations take an advisory lock, so replicas starting
// together apply them once.
func OpenPostgres(ctx context.Context, dsn string) (Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: open postgres: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: open postgres: %w", err)
	}
	if err := migrate(ctx, db, postgresDialect, time.Now()); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: open postgres: %w", err)
	}
	return &sqlStore{r: db, w: db, d: postgresDialect}, nil
}
