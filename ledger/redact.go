package ledger

import (
	"bytes"
	"unicode/utf8"
)

// Redacted replaces each secret RedactBody finds.
const Redacted = "[REDACTED]"

// maxTail is the most bytes of a trailing word that RedactBody drops
// from a cut body.
const maxTail = 256

// RedactBody returns a copy of b with the secrets it recognises replaced
// by Redacted, in one pass over b (BenchmarkRedactBody: a regular
// expression per rule took 100 times as long). It reads b as words (runs of letters, digits
// and - _ . ~ + / with = as padding at a word's end) and replaces:
//
//   - a word shaped as a key: sk- and 16 or more characters (OpenAI's
//     sk-, sk-proj-, sk-svcacct-, Anthropic's sk-ant-, this gateway's
//     sk-so-); an AWS access key id (AKIA, ASIA, ABIA or ACCA and 16
//     capitals or digits); a Google API key (AIza and 35 more); an Azure
//     key (32 hex digits, which an MD5 sum matches too, or the 84- or
//     88-character keys with JQQJ9 at 52); a JSON Web Token (eyJ and
//     three dotted parts); a GitHub token (ghp_, gho_, ghu_, ghs_, ghr_
//     and 30 or more);
//   - the word after "Bearer" or "Basic" (8 characters or more);
//   - the value (6 characters or more, up to a quote, space, comma,
//     semicolon, brace or &) after a name ending in api_key, apikey,
//     api-key, secret, secret_key, access_key, password, passwd, token
//     or access_token (any prefix: aws_secret_access_key, x-api-key)
//     and a : or =, quoted or not;
//   - a PEM private key block, to its end (or the body's).
//
// cut says b is the first part of a longer body: its last word (up to
// 256 bytes) is dropped too, since it may be the start of a secret no
// rule can recognise any more, and so is a character cut in two.
func RedactBody(b []byte, cut bool) []byte {
	if cut {
		b = dropTail(b)
	}
	out := make([]byte, 0, len(b))
	var prev []byte // the previous word
	prevEnd := 0    // where it ended
	for i := 0; i < len(b); {
		if b[i] == '-' {
			if n := privateKeyLen(b[i:]); n > 0 {
				out = append(out, Redacted...)
				i += n
				prev, prevEnd = nil, i
				continue
			}
		}
		if !isWordByte(b[i]) || b[i] == '=' {
			out = append(out, b[i])
			i++
			continue
		}
		j := i
		for j < len(b) && isWordByte(b[j]) && b[j] != '=' {
			j++
		}
		if k := padding(b, j); k > j {
			j = k
		}
		for j > i+1 && b[j-1] == '.' { // a sentence's full stop
			j--
		}
		w := b[i:j]
		switch {
		case secretWord(w), len(w) >= 8 && authScheme(prev) && onlySpaces(b[prevEnd:i]):
			out = append(out, Redacted...)
		case assignment(b[prevEnd:i]) && secretName(prev) && valueLen(b[i:]) >= 6:
			out = append(out, Redacted...)
			j = i + valueLen(b[i:])
		default:
			out = append(out, w...)
		}
		prev, prevEnd, i = w, j, j
	}
	return out
}

// padding is where the = padding after a word ending at j ends, when it
// ends the word (it is followed by no word byte); else j.
func padding(b []byte, j int) int {
	k := j
	for k < len(b) && b[k] == '=' {
		k++
	}
	if k == j || k < len(b) && isWordByte(b[k]) {
		return j
	}
	return k
}

// secretWord reports whether w is shaped as a key or token.
func secretWord(w []byte) bool {
	n := len(w)
	switch {
	case n >= 19 && bytes.HasPrefix(w, []byte("sk-")):
		return true
	case n == 20 && (bytes.HasPrefix(w, []byte("AKIA")) || bytes.HasPrefix(w, []byte("ASIA")) ||
		bytes.HasPrefix(w, []byte("ABIA")) || bytes.HasPrefix(w, []byte("ACCA"))):
		return all(w, func(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' })
	case n >= 39 && bytes.HasPrefix(w, []byte("AIza")):
		return true
	case n == 32:
		return all(w, isHex)
	case (n == 84 || n == 88) && string(w[52:57]) == "JQQJ9":
		return true
	case n >= 30 && bytes.HasPrefix(w, []byte("eyJ")):
		parts := bytes.Split(w, []byte("."))
		return len(parts) == 3 && len(parts[1]) >= 8 && len(parts[2]) >= 8
	case n >= 34 && w[0] == 'g' && w[1] == 'h' && w[3] == '_' && bytes.IndexByte([]byte("pousr"), w[2]) >= 0:
		return true
	}
	return false
}

// secretNames end a name whose value is a secret.
var secretNames = []string{"api_key", "apikey", "api-key", "secret", "secret_key", "access_key", "password", "passwd",
	"token", "access_token"}

// secretName reports whether w, in lower case, is or ends (after _ or -)
// in one of secretNames.
func secretName(w []byte) bool {
	if len(w) < 5 || len(w) > 64 {
		return false
	}
	var lower [64]byte
	l := lower[:len(w)]
	for i, c := range w {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		l[i] = c
	}
	for _, n := range secretNames {
		if bytes.HasSuffix(l, []byte(n)) && (len(l) == len(n) || l[len(l)-len(n)-1] == '_' || l[len(l)-len(n)-1] == '-') {
			return true
		}
	}
	return false
}

// authScheme reports whether w is Bearer or Basic, in any case.
func authScheme(w []byte) bool {
	return bytes.EqualFold(w, []byte("bearer")) || bytes.EqualFold(w, []byte("basic"))
}

// assignment reports whether gap, between a name and a value, is one :
// or = with quotes and spaces around it.
func assignment(gap []byte) bool {
	ops := 0
	for _, c := range gap {
		switch c {
		case ':', '=':
			ops++
		case '"', '\'', ' ', '\t':
		default:
			return false
		}
	}
	return ops == 1
}

// valueLen is the length of the value that starts b: up to a quote,
// white space, comma, semicolon, closing brace or &.
func valueLen(b []byte) int {
	for i, c := range b {
		switch c {
		case '"', '\'', ' ', '\t', '\n', '\r', ',', ';', '}', '&':
			return i
		}
	}
	return len(b)
}

func onlySpaces(b []byte) bool {
	return len(b) > 0 && all(b, func(c byte) bool { return c == ' ' || c == '\t' })
}

// privateKeyLen is the length of the PEM private key block that starts
// b (to the end of b when it has no end line), 0 when none does.
func privateKeyLen(b []byte) int {
	const begin, kind = "-----BEGIN ", "PRIVATE KEY-----"
	if !bytes.HasPrefix(b, []byte(begin)) {
		return 0
	}
	line := b[:min(len(b), 80)]
	if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	if !bytes.Contains(line, []byte(kind)) {
		return 0
	}
	end := bytes.Index(b, []byte("-----END "))
	if end < 0 {
		return len(b)
	}
	k := bytes.Index(b[end:], []byte(kind))
	if k < 0 {
		return len(b)
	}
	return end + k + len(kind)
}

// dropTail cuts a partial UTF-8 character and the trailing word off b.
func dropTail(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if r, _ := utf8.DecodeRune(b[len(b)-i:]); r == utf8.RuneError {
				b = b[:len(b)-i]
			}
			break
		}
	}
	n := 0
	for n < len(b) && n < maxTail && isWordByte(b[len(b)-1-n]) {
		n++
	}
	return b[:len(b)-n]
}

// wordBytes are the bytes of words: letters, digits, - _ . + / = ~.
var wordBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || bytes.IndexByte([]byte("-_.+/=~"), byte(c)) >= 0
	}
	return t
}()

func isWordByte(c byte) bool { return wordBytes[c] }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func all(b []byte, f func(byte) bool) bool {
	for _, c := range b {
		if !f(c) {
			return false
		}
	}
	return true
}

// RedactLiterals returns b with every occurrence of each of secrets (the
// configuration's own, word for word) replaced by Redacted; b itself
// when none occurs. With cut, a secret's first part (8 bytes or more) at
// the end of b is replaced too.
func RedactLiterals(b []byte, secrets []string, cut bool) []byte {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if bytes.Contains(b, []byte(s)) {
			b = bytes.ReplaceAll(b, []byte(s), []byte(Redacted))
		}
		if cut {
			for n := min(len(s)-1, len(b)); n >= 8; n-- {
				if bytes.HasSuffix(b, []byte(s[:n])) {
					b = append(b[:len(b)-n:len(b)-n], Redacted...)
					break
				}
			}
		}
	}
	return b
}
