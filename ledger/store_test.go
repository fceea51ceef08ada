package ledger_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgertest"
)

func TestSQLite(t *testing.T) {
	ledgertest.Run(t, ledgertest.Harness{
		Open: func(t *testing.T) ledger.Store {
			s, err := ledger.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "data", "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		Break: breakSQLite,
	})
}

// breakSQLite makes the database read-only under the store: query_only
// on its one writing connection makes every write fail with
// SQLITE_READONLY, as a read-only file or directory would, and works as
// root too (whom file permissions would not stop). PRAGMA max_page_count
// would mimic a full disk, but small batches still fit in the pages a new
// database has.
func breakSQLite(t *testing.T, s ledger.Store) (restore func()) {
	db := ledger.WriterDB(s)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := db.ExecContext(ctx, "PRAGMA query_only = 0"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPostgres(t *testing.T) {
	srv := pgtest.StartServer(t)
	ledgertest.Run(t, ledgertest.Harness{
		Open: func(t *testing.T) ledger.Store {
			s, err := ledger.OpenPostgres(context.Background(), srv.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		// The database goes down and comes back with its data.
		Break: func(t *testing.T, s ledger.Store) (restore func()) {
			srv.Stop()
			return srv.Restart
		},
	})
}
