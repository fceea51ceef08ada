package h1

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// encode writes req in HTTP/1.1 form into buf, its body (of known length)
// included, so that it leaves in one write. It writes what
// Request.Write would, without its allocations (fmt for the request line
// and Host, a transfer writer, the request URI joined to its query),
// and checks what goes on the wire as net/http's transport does: a
// method, header name or value that could split the request is refused
// (naming the header, never its value). A request it does not make this
// way (unknown length, trailers, a transfer encoding) goes through
// Request.Write.
func encode(buf *bytes.Buffer, req *http.Request) error {
	hasBody := req.Body != nil && req.Body != http.NoBody
	if (hasBody && req.ContentLength <= 0) || len(req.TransferEncoding) > 0 || len(req.Trailer) > 0 {
		// bytes.Buffer is an io.ByteWriter: Request.Write writes into it
		// without a bufio.Writer of its own.
		return req.Write(buf)
	}
	if hasBody {
		defer req.Body.Close()
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !isToken(method) {
		return fmt.Errorf("h1: invalid method %q", method)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	host = removeZone(host)
	if host == "" || !validValue(host) || strings.ContainsAny(host, " \t/?#") {
		return errors.New("h1: invalid Host")
	}
	buf.WriteString(method)
	buf.WriteByte(' ')
	switch {
	case req.URL.Opaque != "":
		buf.WriteString(req.URL.Opaque)
	default:
		path := req.URL.EscapedPath()
		if path == "" {
			path = "/"
		}
		buf.WriteString(path)
	}
	if req.URL.RawQuery != "" || req.URL.ForceQuery {
		buf.WriteByte('?')
		buf.WriteString(req.URL.RawQuery)
	}
	buf.WriteString(" HTTP/1.1\r\nHost: ")
	buf.WriteString(host)
	buf.WriteString("\r\n")
	if ua, ok := req.Header["User-Agent"]; !ok {
		buf.WriteString("User-Agent: Go-http-client/1.1\r\n")
	} else if len(ua) > 0 && ua[0] != "" {
		if !validValue(ua[0]) {
			return errors.New(`h1: invalid value for header "User-Agent"`)
		}
		buf.WriteString("User-Agent: ")
		buf.WriteString(ua[0])
		buf.WriteString("\r\n")
	}
	if req.Close && len(req.Header["Connection"]) == 0 {
		buf.WriteString("Connection: close\r\n")
	}
	switch {
	case hasBody:
		buf.WriteString("Content-Length: ")
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), req.ContentLength, 10))
		buf.WriteString("\r\n")
	case method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch:
		buf.WriteString("Content-Length: 0\r\n")
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		if !isToken(k) {
			return fmt.Errorf("h1: invalid header name %q", k)
		}
		for _, v := range vs {
			if !validValue(v) {
				return fmt.Errorf("h1: invalid value for header %q", k)
			}
			buf.WriteString(k)
			buf.WriteString(": ")
			buf.WriteString(trimOWS(v))
			buf.WriteString("\r\n")
		}
	}
	buf.WriteString("\r\n")
	if !hasBody {
		return nil
	}
	buf.Grow(int(req.ContentLength))
	p := buf.AvailableBuffer()[:req.ContentLength]
	n, err := io.ReadFull(req.Body, p)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return fmt.Errorf("h1: ContentLength=%d with a body of %d bytes", req.ContentLength, n)
	}
	if err != nil {
		return err
	}
	buf.Write(p)
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110 5.6.2): a method
// or a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || !tokenChars[c] {
			return false
		}
	}
	return true
}

var tokenChars = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validValue reports whether s may be a header value: no control
// character but a tab (no CR or LF that would end it early).
func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// trimOWS trims the spaces and tabs around a header value, as net/http
// writes them.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// removeZone drops an IPv6 literal's zone ("[fe80::1%en0]:80"), which
// is the client's and not sent, as net/http does.
func removeZone(host string) string {
	if !strings.HasPrefix(host, "[") {
		return host
	}
	i := strings.LastIndex(host, "]")
	j := strings.LastIndex(host[:max(i, 0)], "%")
	if i < 0 || j < 0 {
		return host
	}
	return host[:j] + host[i:]
}
