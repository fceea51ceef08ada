package ledgerapi

import (
	"unicode"
	"unicode/utf8"
)

// MaxNameLen bounds, in bytes, the name of a key or a team and each pool
// and model name a key lists.
const MaxNameLen = 128

// checkName refuses a name a store or a terminal would mishandle: longer
// than MaxNameLen bytes, not UTF-8, or holding a control or format
// character (a NUL byte, which PostgreSQL refuses; escape sequences and
// bidirectional overrides, which `keys list` would print as they are).
// The error names the field and never echoes the name.
func checkName(field, s string) error {
	if len(s) > MaxNameLen {
		return badField(field, "longer than %d bytes", MaxNameLen)
	}
	if !utf8.ValidString(s) {
		return badField(field, "not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return badField(field, "holds the control character %U; use letters, digits, spaces and punctuation", r)
		}
	}
	return nil
}
