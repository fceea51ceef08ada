package ledger

import "database/sql"

// WriterDB returns the pool that s writes through, for tests that break
// the database under it.
func WriterDB(s Store) *sql.DB { return s.(*sqlStore).w }

// Migrations returns how many migrations the sqlite or postgres schema has.
func Migrations(name string) int {
	ms, err := migrations(Dialect{Name: name})
	if err != nil {
		panic(err)
	}
	return len(ms)
}
