package pgtest

import (
	"context"
	"database/sql"
	"testing"
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
