package ledger

import "strings"

// dialect holds what differs between the SQL databases: little, since the
// schema uses only types both have.
type dialect struct {
	// name is also the migrations folder.
	name string
	// dollar: placeholders are $1, $2… instead of ?.
	dollar bool
	// migrateLock, when set, runs first in the migration transaction so
	// that replicas starting together migrate one at a time.
	migrateLock string
	// isUnique reports a unique-constraint violation.
	isUnique func(error) bool
}

// bind rewrites the ? placeholders of query for d. The queries of this
// package have no ? inside literals.
func (d dialect) bind(query string) string {
	if !d.dollar {
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
