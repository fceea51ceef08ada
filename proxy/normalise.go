package proxy

import (
	"fmt"
	"net/http"
	"strings"
)

// normalisePath returns the path the gateway routes a request by, from
// the path as the caller escaped it (URL.EscapedPath): decoded, with its
// empty segments (a doubled, leading or trailing slash) dropped, so that
// "/v1//chat/completions" is "/v1/chat/completions", routed by its model
// as it would be upstream.
//
// A path that could mean one thing to the gateway and another upstream is
// refused with 400 invalid_path, never guessed at: a dot segment (".",
// "..", "...", however escaped), an escaped dot, slash, backslash or
// percent (so "%2e%2e", "..%2f" and the double-escaped "%252e%252e" in
// any case), a malformed escape, and any byte outside the letters, digits
// and "-._~:@!$&'()*+,=" once decoded (controls, spaces, backslashes,
// ";", non-ASCII). The result is idempotent: it holds nothing an escape
// could decode further, and normalisePath returns it unchanged.
func normalisePath(escaped string) (string, error) {
	if plainPath(escaped) {
		return escaped, nil // as the decoding would make it, without a copy
	}
	return decodePath(escaped)
}

// plainPath reports whether escaped is already what decodePath makes of
// it: segments neither empty nor all dots, of path bytes alone (so no
// %-escape), and no trailing slash. The paths of API calls are.
func plainPath(escaped string) bool {
	if len(escaped) < 2 || escaped[0] != '/' || escaped[len(escaped)-1] == '/' {
		return false
	}
	dots, n := 0, 0 // of the segment so far: its dots, its bytes
	for i := 1; i < len(escaped); i++ {
		c := escaped[i]
		if c == '/' {
			if n == 0 || dots == n {
				return false
			}
			dots, n = 0, 0
			continue
		}
		if !pathByte(c) {
			return false
		}
		n++
		if c == '.' {
			dots++
		}
	}
	return dots != n
}

// decodePath is normalisePath for a path that is not plain.
func decodePath(escaped string) (string, error) {
	if !strings.HasPrefix(escaped, "/") {
		return "", pathRefused("the path does not start with /")
	}
	var b strings.Builder
	b.Grow(len(escaped))
	for seg := range strings.SplitSeq(escaped[1:], "/") {
		if seg == "" {
			continue
		}
		b.WriteByte('/')
		if err := decodeSegment(&b, seg); err != nil {
			return "", err
		}
	}
	if b.Len() == 0 {
		return "/", nil
	}
	return b.String(), nil
}

// decodeSegment writes the path segment seg decoded to b, or returns why
// it is refused (see normalisePath).
func decodeSegment(b *strings.Builder, seg string) error {
	dots := 0
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c == '%' {
			if i+2 >= len(seg) || unhex(seg[i+1]) < 0 || unhex(seg[i+2]) < 0 {
				return pathRefused("the path has a malformed %-escape")
			}
			c = byte(unhex(seg[i+1])<<4 | unhex(seg[i+2]))
			i += 2
			switch c {
			case '.', '/', '\\', '%':
				return pathRefused(fmt.Sprintf("the path has an escaped %q (%%%02X)", c, c))
			}
		}
		if !pathByte(c) {
			return pathRefused(fmt.Sprintf("the path has a byte (%#02x) the gateway does not forward", c))
		}
		if c == '.' {
			dots++
		}
		b.WriteByte(c)
	}
	if dots == len(seg) {
		return pathRefused("the path has a dot segment (. or ..)")
	}
	return nil
}

// pathByte reports whether c may stand in a decoded path segment: RFC
// 3986's unreserved characters and the sub-delimiters but ";" (a path
// parameter to some servers: "..;/"), plus ":" and "@".
func pathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~:@!$&'()*+,=", c) >= 0
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// pathRefused is the 400 of a path normalisePath refuses: msg says why.
// The path itself is not echoed.
func pathRefused(msg string) *apiError {
	return requestError(http.StatusBadRequest, "invalid_path",
		"switchover: "+msg+"; the gateway forwards only plain paths, such as /v1/files/{id}, and refuses any it could read differently from a backend")
}

// anthropicPath reports whether a path, as its caller sent it, is under
// /v1/messages, ignoring empty segments: its errors are answered in
// Anthropic's format even when the path is refused.
func anthropicPath(p string) bool {
	var segs []string
	for s := range strings.SplitSeq(p, "/") {
		if s != "" {
			segs = append(segs, s)
			if len(segs) == 2 {
				break
			}
		}
	}
	return len(segs) == 2 && segs[0] == "v1" && segs[1] == "messages"
}
