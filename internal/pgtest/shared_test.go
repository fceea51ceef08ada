package pgtest

import (
	"context"
	"database/sql"
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestSharedGivesEachTestItsOwnDatabase: two tests on the shared server
// get two databases of one server, each with its own tables.
func TestSharedGivesEachTestItsOwnDatabase(t *testing.T) {
	var dsns []string
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) {
			dsn := Shared(t)
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			// A table of the other test's would make this fail.
			if _, err := db.ExecContext(context.Background(), "CREATE TABLE t (n int)"); err != nil {
				t.Fatal(err)
			}
			dsns = append(dsns, dsn)
		})
	}
	if len(dsns) != 2 || dsns[0] == dsns[1] {
		t.Fatalf("DSNs %q: want two databases", dsns)
	}
	if s := shared.srv; s == nil || dsns[0] != s.DSN("test1") || dsns[1] != s.DSN("test2") {
		t.Fatalf("DSNs %q not on the one shared server", dsns)
	}
}
