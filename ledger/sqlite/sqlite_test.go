package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgertest"
)

func TestSQLite(t *testing.T) {
	var mu sync.Mutex
	writers := map[ledger.Store]*sql.DB{}
	ledgertest.Run(t, ledgertest.Harness{
		Open: func(t *testing.T) ledger.Store {
			s, w, err := open(context.Background(), filepath.Join(t.TempDir(), "data", "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			mu.Lock()
			writers[s] = w
			mu.Unlock()
			return s
		},
		Break: func(t *testing.T, s ledger.Store) (restore func()) {
			mu.Lock()
			db := writers[s]
			mu.Unlock()
			return breakSQLite(t, db)
		},
	})
}

// breakSQLite makes the database read-only under the store whose one
// writing connection is db: query_only on it makes every write fail with
// SQLITE_READONLY, as a read-only file or directory would, and works as
// root too (whom file permissions would not stop). PRAGMA max_page_count
// would mimic a full disk, but small batches still fit in the pages a new
// database has.
func breakSQLite(t *testing.T, db *sql.DB) (restore func()) {
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
