// Package sqlite opens a ledger.Store in an SQLite database (the embedded
// store: one file in the data directory, nothing else to run). It holds
// the SQLite driver (modernc.org/sqlite, pure Go), so that only the
// programs that open a store by configuration link it, not the packages
// that merely use a ledger.Store.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/switchover-gw/switchover/ledger"
)

var dialect = ledger.Dialect{
	Name: "sqlite",
	IsUnique: func(err error) bool {
		var e *sqlite.Error
		return errors.As(err, &e) &&
			(e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
	},
}

// busyTimeout is how long a statement waits for a lock held by another
// connection or process before it fails with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Open opens (creating it and its directory when missing) the SQLite
// database at path, conventionally ledger.db in switchover's data
// directory, and applies the migrations it lacks.
//
// The database runs in WAL mode (readers never wait for the writer) with
// synchronous=NORMAL: a crash of the process loses nothing committed, a
// power cut may lose the last transactions. Writes go through a single
// connection, as SQLite allows one writer at a time; reads use a pool of
// their own. Another process may open the same file; writers then wait up
// to 10 s for each other (busy_timeout). The Store is safe for concurrent
// use.
func Open(ctx context.Context, path string) (ledger.Store, error) {
	s, _, err := open(ctx, path)
	return s, err
}

// open is Open, also returning the pool of the one connection that
// writes, for tests that break the database under the store.
func open(ctx context.Context, path string) (ledger.Store, *sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("ledger: open sqlite: %w", err)
	}
	pragmas := url.Values{"_pragma": {
		fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		"journal_mode(WAL)",
		"synchronous(NORMAL)",
	}}
	w, err := sql.Open("sqlite", "file:"+path+"?"+pragmas.Encode()+"&_txlock=immediate")
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: open sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	if err := ledger.Migrate(ctx, w, dialect, time.Now()); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("ledger: open sqlite %s: %w", path, err)
	}
	pragmas.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", "file:"+path+"?"+pragmas.Encode())
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("ledger: open sqlite %s: %w", path, err)
	}
	return ledger.NewSQLStore(r, w, dialect), w, nil
}
