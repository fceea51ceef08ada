package ledger

import "database/sql"

// WriterDB returns the pool that s writes through, for tests that break
// the database under it.
func WriterDB(s Store) *sql.DB { return s.(*sqlStore).w }
