package ledger

import (
	"database/sql"
	"strings"
)

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

// TrafficBackfill returns the statement of migration 0014 (of the sqlite
// or postgres schema) that fills traffic_daily from the request log.
func TrafficBackfill(name string) string {
	ms, err := migrations(Dialect{Name: name})
	if err != nil {
		panic(err)
	}
	for _, m := range ms {
		if m.version == 14 {
			return m.sql[strings.Index(m.sql, "INSERT INTO traffic_daily"):]
		}
	}
	panic("no migration 0014")
}
