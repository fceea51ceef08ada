package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestStartServesQueriesAndRestarts(t *testing.T) {
	s := StartServer(t)
	dsn := s.NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (n int); INSERT INTO t VALUES (41)"); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT n + 1 FROM t").Scan(&n); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if n != 42 {
		t.Fatalf("n + 1 = %d, want 42", n)
	}
	if s.DSN("x") == dsn {
		t.Fatal("NewDatabase returned the DSN of another database")
	}
}

// TestFailWritesFailsInsertsOnly: with FailWrites an INSERT fails with
// SQLSTATE 53100 (disk_full) and a SELECT works; after restore the
// INSERT works.
func TestFailWritesFailsInsertsOnly(t *testing.T) {
	dsn := Start(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (n int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	restore := FailWrites(t, dsn, "t")
	var pgErr *pgconn.PgError
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (2)"); !errors.As(err, &pgErr) || pgErr.Code != "53100" {
		t.Fatalf("INSERT with the disk full: %v, want SQLSTATE 53100", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("SELECT with the disk full: %d rows, %v; want 1", n, err)
	}
	restore()
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatalf("INSERT after restore: %v", err)
	}
}
