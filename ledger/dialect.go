package ledger

import "strings"

// Dialect holds what differs between the SQL databases the store runs on:
// little, since the schema uses only types both have. The driver packages
// ledger/sqlite and ledger/postgres each define one and pass it to
// Migrate and NewSQLStore. A Dialect is a plain value, safe for
// concurrent use once made.
type Dialect struct {
	// Name is the database ("sqlite" or "postgres") and the folder of its
	// migrations in this package. Migrate fails for any other name, as
	// there are no migrations for it.
	Name string
	// Dollar: placeholders are $1, $2… instead of ?. Default false (?).
	Dollar bool
	// MigrateLock, when set, runs first in the migration transaction so
	// that replicas starting together migrate one at a time. Default ""
	// (no lock: fine for a database one process migrates).
	MigrateLock string
	// IsUnique reports a unique-constraint violation, which the store
	// turns into ErrConflict. Required: the store calls it on every
	// failed insert of a key.
	IsUnique func(error) bool
}

// bind rewrites the ? placeholders of query for d. The queries of this
// package have no ? inside literals.
func (d Dialect) bind(query string) string {
	if !d.Dollar {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
