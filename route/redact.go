package route

import (
	"bytes"
	"io"
	"regexp"
	"strings"
)

// Redaction of a backend's credentials from what reaches a client, a log
// or a trace.
//
// An upstream may quote the key it was sent in an error body, in an error
// event of a stream, or in a header, and not always as it was sent: in
// another case, JSON-escaped ("sk\u002dabc"), URL- or HTML-encoded, or
// split by white space or line breaks. The gateway reads each text
// through a normaliser that folds ASCII case, decodes JSON escapes
// (\uXXXX of any character, \/ \\ \"), \xHH, %HH and &#NN; escapes, and
// skips white space (raw, escaped, and Unicode spaces such as U+00A0 or
// U+200B) and the "data:" that starts a continuation line of a stream
// event; wherever the normalised text holds a secret, the span of the
// original text it came from is replaced by "[redacted]". No copy is made
// when no secret is found: the scan reads the text in place.
//
// A stream is redacted line by line, every line (an error event need not
// say "error", nor be JSON), as it passes: no event is held back. A key
// split across two lines of a stream is caught by its pieces: a line that
// ends with the first minFragment or more characters of a secret, or
// whose payload starts with a later piece of one (a suffix, or a middle
// piece that fills the rest of the line), has that piece redacted; so at
// most minFragment-1 characters of a key at the edge of a line can pass,
// never enough to use it.

// minSecret is the shortest credential that is redacted: a shorter one
// would redact ordinary text.
const minSecret = 4

// minFragment is the shortest piece of a key split across stream lines
// that is redacted.
const minFragment = 4

// redact removes the backend's own credentials from text that came from
// upstream or from a transport error, before it is relayed to a client,
// a log or a trace: an upstream error may quote the key it was sent. It
// removes the provider's keys and the bearer tokens it sent last (see
// credentials) in any of the forms above, and, since a token source may
// have rotated its token since, anything shaped like a bearer token or a
// JWT. It returns s itself, without allocating, when nothing is found.
func (b *Backend) redact(s string) string {
	var buf [2]string
	return redactTokens(redactSecrets(s, appendCredentials(buf[:0], b.Provider)))
}

// redactingReader passes a stream on with the backend's credentials
// redacted from every line, in any of the forms redact finds, and from
// the pieces of one split across lines (see minFragment). A line without
// any is passed on as it is, without a copy.
func (b *Backend) redactingReader(r io.Reader) *lineReader {
	return &lineReader{r: r, fn: func(line []byte) []byte {
		var buf [2]string
		secrets := appendCredentials(buf[:0], b.Provider)
		out := redactLine(line, secrets)
		if bytes.Contains(out, []byte("eyJ")) || containsBearer(out) {
			return []byte(redactTokens(string(out)))
		}
		return out
	}}
}

// redactSecrets returns s with every secret of secrets (those of at least
// minSecret bytes) replaced by "[redacted]", wherever the normalised text
// holds it; s itself when none is found.
func redactSecrets(s string, secrets []string) string {
	var out []byte
	last := 0
	for p := 0; ; {
		st, en := firstSecret(s, p, secrets)
		if st < 0 {
			break
		}
		out = append(append(out, s[last:st]...), "[redacted]"...)
		last, p = en, en
	}
	if out == nil {
		return s
	}
	return string(append(out, s[last:]...))
}

// redactLine is redactSecrets for one line of a stream, which also
// redacts the pieces of a secret split across lines: a trailing piece
// that starts one, and a leading piece (after "data:") that ends one or
// fills the line. It returns line itself when nothing is found.
func redactLine(line []byte, secrets []string) []byte {
	type span struct{ st, en int }
	var spans []span
	for p := 0; ; {
		st, en := firstSecret(line, p, secrets)
		if st < 0 {
			break
		}
		spans = append(spans, span{st, en})
		p = en
	}
	from := 0
	if n := len(spans); n > 0 {
		from = spans[n-1].en
	}
	if st, en := trailingPiece(line, from, secrets); st >= 0 {
		spans = append(spans, span{st, en})
	}
	if st, en := leadingPiece(line, secrets); st >= 0 && (len(spans) == 0 || en <= spans[0].st) {
		spans = append([]span{{st, en}}, spans...)
	}
	if len(spans) == 0 {
		return line
	}
	out := make([]byte, 0, len(line))
	last := 0
	for _, sp := range spans {
		if sp.st < last {
			continue
		}
		out = append(append(out, line[last:sp.st]...), "[redacted]"...)
		last = sp.en
	}
	return append(out, line[last:]...)
}

// text is what the normaliser reads: a string or a line of a stream.
type text interface{ ~string | ~[]byte }

// firstSecret returns the span [st, en) of the first secret found in s at
// or after from, the longest when two start together; -1, -1 for none.
func firstSecret[T text](s T, from int, secrets []string) (st, en int) {
	st, en = -1, -1
	for _, secret := range secrets {
		if len(secret) < minSecret {
			continue
		}
		a, b := findSecret(s, from, secret)
		if a >= 0 && (st < 0 || a < st || a == st && b > en) {
			st, en = a, b
		}
	}
	return st, en
}

// findSecret returns the span of the first copy of secret in the
// normalised text of s at or after from, or -1, -1. A copy starts on a
// character, never on white space or inside an escape.
func findSecret[T text](s T, from int, secret string) (int, int) {
	first := lower(secret[0])
	for p := from; p < len(s); {
		if b := s[p]; b != '\\' && b != '%' && b != '&' && lower(b) != first {
			p++ // the common case: a byte that starts no copy
			continue
		}
		c, n, skip := unit(s, p)
		if !skip && c == first {
			if q, k, _ := matchRun(s, p, secret, 0); k == len(secret) {
				return p, q
			}
		}
		p += n
	}
	return -1, -1
}

// matchRun matches the normalised text of s from p against secret[j:] as
// far as they agree: q is where the last matched character ends, k how
// many characters matched, and end whether only white space follows q.
func matchRun[T text](s T, p int, secret string, j int) (q, k int, end bool) {
	q = p
	for i := p; j+k < len(secret) && i < len(s); {
		c, n, skip := unit(s, i)
		if !skip {
			if c != lower(secret[j+k]) {
				break
			}
			k++
			q = i + n
		}
		i += n
	}
	return q, k, blankFrom(s, q)
}

// blankFrom reports whether s holds only white space from i.
func blankFrom[T text](s T, i int) bool {
	for i < len(s) {
		_, n, skip := unit(s, i)
		if !skip {
			return false
		}
		i += n
	}
	return true
}

// trailingPiece returns the span of the first minFragment or more
// characters of a secret (but not all of it) that end the line, searched
// from from; -1, -1 for none.
func trailingPiece(line []byte, from int, secrets []string) (int, int) {
	for _, secret := range secrets {
		if len(secret) < minSecret {
			continue
		}
		first := lower(secret[0])
		for p := from; p < len(line); {
			c, n, skip := unit(line, p)
			if !skip && c == first {
				if q, k, end := matchRun(line, p, secret, 0); end && k >= minFragment && k < len(secret) {
					return p, q
				}
			}
			p += n
		}
	}
	return -1, -1
}

// leadingPiece returns the span of a later piece of a secret that starts
// the line's payload (after "data:" and white space): minFragment or more
// characters that end the secret or fill the rest of the line; -1, -1
// for none.
func leadingPiece(line []byte, secrets []string) (int, int) {
	p := 0
	if bytes.HasPrefix(line, []byte("data:")) {
		p = len("data:")
	}
	for p < len(line) {
		_, n, skip := unit(line, p)
		if !skip {
			break
		}
		p += n
	}
	if p >= len(line) {
		return -1, -1
	}
	c, _, _ := unit(line, p)
	for _, secret := range secrets {
		if len(secret) < minSecret {
			continue
		}
		for j := 1; j+minFragment <= len(secret); j++ {
			if lower(secret[j]) != c {
				continue
			}
			if q, k, end := matchRun(line, p, secret, j); k >= minFragment && (j+k == len(secret) || end) {
				return p, q
			}
		}
	}
	return -1, -1
}

// unit reads the character at s[i] as the normaliser sees it: c, the
// ASCII byte it stands for in lower case (0 for any other character), n
// its width in s, and skip when it is white space. Escapes are decoded:
// JSON's \uXXXX, \/, \\, \" and \n, \r, \t, \f (white space), \xHH, %HH
// and HTML's &#NN; and &#xHH;. A line break followed by "data:" (a
// stream event's next line) is white space as a whole.
func unit[T text](s T, i int) (c byte, n int, skip bool) {
	b := s[i]
	switch {
	case isSpace(b):
		n = 1
		if b == '\n' && hasPrefix(s, i+1, "data:") {
			n += len("data:")
		}
		return 0, n, true
	case b == '\\' && i+1 < len(s):
		switch e := s[i+1]; e {
		case 'n', 'r', 't', 'f', 'v':
			return 0, 2, true
		case '/', '\\', '"', '\'':
			return e, 2, false
		case 'u':
			if v, ok := hexAt(s, i+2, 4); ok {
				return codePoint(v, 6)
			}
		case 'x':
			if v, ok := hexAt(s, i+2, 2); ok {
				return codePoint(v, 4)
			}
		}
	case b == '%':
		if v, ok := hexAt(s, i+1, 2); ok {
			return codePoint(v, 3)
		}
	case b == '&' && hasPrefix(s, i+1, "#"):
		if v, w, ok := htmlRef(s, i+2); ok {
			return codePoint(v, 2+w)
		}
	case b >= 0x80:
		if w := unicodeSpace(s, i); w > 0 {
			return 0, w, true
		}
		return 0, 1, false
	}
	return lower(b), 1, false
}

// codePoint is unit's answer for an escape of width n standing for v.
func codePoint(v rune, n int) (byte, int, bool) {
	switch {
	case v < 0x80 && isSpace(byte(v)):
		return 0, n, true
	case v < 0x80:
		return lower(byte(v)), n, false
	case isUnicodeSpace(v):
		return 0, n, true
	}
	return 0, n, false
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// isUnicodeSpace reports white space and invisible separators outside
// ASCII: no-break and typographic spaces, zero-width spaces and joiners,
// line and paragraph separators, the byte-order mark.
func isUnicodeSpace(v rune) bool {
	switch {
	case v == 0x85, v == 0xA0, v == 0x1680, v == 0x180E, v >= 0x2000 && v <= 0x200D,
		v == 0x2028, v == 0x2029, v == 0x202F, v == 0x205F, v == 0x2060, v == 0x3000, v == 0xFEFF:
		return true
	}
	return false
}

// unicodeSpace returns the width of the UTF-8 encoded white space at
// s[i], 0 if there is none.
func unicodeSpace[T text](s T, i int) int {
	var v rune
	var w int
	switch b := s[i]; {
	case b&0xE0 == 0xC0 && i+1 < len(s):
		v, w = rune(b&0x1F)<<6|rune(s[i+1]&0x3F), 2
	case b&0xF0 == 0xE0 && i+2 < len(s):
		v, w = rune(b&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F), 3
	default:
		return 0
	}
	if isUnicodeSpace(v) {
		return w
	}
	return 0
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func hasPrefix[T text](s T, i int, p string) bool {
	if i+len(p) > len(s) {
		return false
	}
	for k := 0; k < len(p); k++ {
		if s[i+k] != p[k] {
			return false
		}
	}
	return true
}

// hexAt reads n hexadecimal digits at s[i].
func hexAt[T text](s T, i, n int) (rune, bool) {
	if i+n > len(s) {
		return 0, false
	}
	var v rune
	for k := range n {
		d, ok := hexDigit(s[i+k])
		if !ok {
			return 0, false
		}
		v = v<<4 | d
	}
	return v, true
}

func hexDigit(b byte) (rune, bool) {
	switch {
	case '0' <= b && b <= '9':
		return rune(b - '0'), true
	case 'a' <= b && b <= 'f':
		return rune(b-'a') + 10, true
	case 'A' <= b && b <= 'F':
		return rune(b-'A') + 10, true
	}
	return 0, false
}

// htmlRef reads the rest of an HTML character reference after "&#" at
// s[i]: decimal digits or x and hexadecimal ones, then ";". w is the
// width read.
func htmlRef[T text](s T, i int) (v rune, w int, ok bool) {
	base, k := rune(10), i
	if k < len(s) && (s[k] == 'x' || s[k] == 'X') {
		base, k = 16, k+1
	}
	start := k
	for ; k < len(s) && k-start < 7; k++ {
		d, ok := hexDigit(s[k])
		if !ok || d >= base {
			break
		}
		v = v*base + d
	}
	if k == start || k >= len(s) || s[k] != ';' {
		return 0, 0, false
	}
	return v, k + 1 - i, true
}

// bearerToken and jwt match credentials by their shape: "Bearer <token>"
// in any case, and the three base64url parts of a JSON Web Token (Entra
// ID access tokens are JWTs). They are never modified.
var (
	bearerToken = regexp.MustCompile(`(?i)\bbearer(\s+|%20|\+)[A-Za-z0-9\-._~+/]{8,}=*`)
	jwt         = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`)
)

func redactTokens(s string) string {
	if !strings.Contains(s, "eyJ") && !containsBearer(s) {
		return s // the common case, without a regexp
	}
	s = bearerToken.ReplaceAllString(s, "Bearer [redacted]")
	return jwt.ReplaceAllString(s, "[redacted]")
}

// containsBearer reports whether s contains "bearer" in any case, without
// allocating.
func containsBearer[T text](s T) bool {
	for i := 0; i+6 <= len(s); i++ {
		if s[i]|0x20 == 'b' && equalFold(s, i, "bearer") {
			return true
		}
	}
	return false
}

// equalFold reports whether s at i is p (lower case) in any ASCII case.
func equalFold[T text](s T, i int, p string) bool {
	if i+len(p) > len(s) {
		return false
	}
	for k := 0; k < len(p); k++ {
		if lower(s[i+k]) != p[k] {
			return false
		}
	}
	return true
}
