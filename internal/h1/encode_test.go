package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestEncodeReadsBackAsSent: what encode writes is read back by
// net/http's server parser as the request that was given.
func TestEncodeReadsBackAsSent(t *testing.T) {
	for _, tc := range []struct {
		name, method, url, body, host string
		header                        http.Header
		close                         bool
		wantHeader                    http.Header // checked on the parsed request (nil values: absent)
		wantURI                       string
	}{
		{name: "chat", method: "POST", url: "http://10.0.0.1:8080/openai/deployments/gpt/chat/completions?api-version=2024-10-21",
			body: `{"messages":[]}`, header: http.Header{"Api-Key": {"k"}, "Content-Type": {"application/json"}},
			wantURI:    "/openai/deployments/gpt/chat/completions?api-version=2024-10-21",
			wantHeader: http.Header{"Api-Key": {"k"}, "Content-Type": {"application/json"}, "User-Agent": {"Go-http-client/1.1"}, "Content-Length": {"15"}}},
		{name: "get without a body", method: "GET", url: "http://h/v1/models", wantURI: "/v1/models",
			wantHeader: http.Header{"Content-Length": nil}},
		{name: "post without a body", method: "POST", url: "http://h/x", wantURI: "/x",
			wantHeader: http.Header{"Content-Length": {"0"}}},
		{name: "own user agent and host", method: "POST", url: "http://h/x", host: "other.example", body: "b",
			header: http.Header{"User-Agent": {"app/1"}}, wantURI: "/x", wantHeader: http.Header{"User-Agent": {"app/1"}}},
		{name: "no user agent", method: "POST", url: "http://h/x", body: "b", header: http.Header{"User-Agent": {""}},
			wantURI: "/x", wantHeader: http.Header{"User-Agent": nil}},
		{name: "escaped path and empty query", method: "POST", url: "http://h/a%2Fb/c%20d?", body: "b", wantURI: "/a%2Fb/c%20d?"},
		{name: "connection close", method: "POST", url: "http://h/x", body: "b", close: true, wantURI: "/x",
			wantHeader: http.Header{"Connection": {"close"}}},
		{name: "several values, spaces trimmed", method: "POST", url: "http://h/x", body: "b",
			header: http.Header{"X-A": {" one ", "two"}}, wantURI: "/x", wantHeader: http.Header{"X-A": {"one", "two"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest(tc.method, tc.url, body)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header[k] = v
			}
			req.Host, req.Close = tc.host, tc.close
			var buf bytes.Buffer
			if err := encode(&buf, req); err != nil {
				t.Fatal(err)
			}
			got, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(buf.Bytes())))
			if err != nil {
				t.Fatalf("%q does not parse: %v", buf.String(), err)
			}
			b, _ := io.ReadAll(got.Body)
			if string(b) != tc.body || got.Method != tc.method || got.RequestURI != tc.wantURI {
				t.Errorf("parsed %s %s body %q; want %s %s body %q", got.Method, got.RequestURI, b, tc.method, tc.wantURI, tc.body)
			}
			wantHost := tc.host
			if wantHost == "" {
				wantHost = req.URL.Host
			}
			if got.Host != wantHost {
				t.Errorf("host %q, want %q", got.Host, wantHost)
			}
			raw := buf.String()
			for k, want := range tc.wantHeader {
				if k == "Content-Length" || k == "Connection" {
					has := strings.Contains(raw, "\r\n"+k+": ")
					if want == nil && has || want != nil && !strings.Contains(raw, "\r\n"+k+": "+want[0]+"\r\n") {
						t.Errorf("%s in %q, want %v", k, raw, want)
					}
					continue
				}
				if g := got.Header[k]; strings.Join(g, "|") != strings.Join(want, "|") {
					t.Errorf("%s: %q, want %q", k, g, want)
				}
			}
			if strings.Count(raw, "\r\n\r\n") < 1 || !strings.HasPrefix(raw, tc.method+" ") {
				t.Errorf("raw request %q", raw)
			}
		})
	}
}

// TestEncodeRefusesWhatWouldSplitTheRequest: a header name or value, a
// method or a host that could end a line early or smuggle another
// request is refused, and the error names the header, not its value (a
// value may be a secret).
func TestEncodeRefusesWhatWouldSplitTheRequest(t *testing.T) {
	const secret = "sk-secret-value"
	for name, mod := range map[string]func(*http.Request){
		"value with CRLF":   func(r *http.Request) { r.Header.Set("Api-Key", secret+"\r\nX-Injected: 1") },
		"value with LF":     func(r *http.Request) { r.Header["Authorization"] = []string{"Bearer " + secret + "\nX: y"} },
		"value with NUL":    func(r *http.Request) { r.Header["X-A"] = []string{secret + "\x00"} },
		"name with a space": func(r *http.Request) { r.Header["X A"] = []string{secret} },
		"name with colon":   func(r *http.Request) { r.Header["X:A"] = []string{secret} },
		"user agent":        func(r *http.Request) { r.Header["User-Agent"] = []string{secret + "\r\n"} },
		"method":            func(r *http.Request) { r.Method = "POST /evil HTTP/1.1\r\n" },
		"host":              func(r *http.Request) { r.Host = "h\r\nX-Injected: 1" },
		"host with a space": func(r *http.Request) { r.Host = "h x" },
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", "http://h/x", strings.NewReader("b"))
			mod(req)
			var buf bytes.Buffer
			err := encode(&buf, req)
			if err == nil {
				t.Fatalf("encoded %q", buf.String())
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error echoes the value: %v", err)
			}
		})
	}
}

// TestEncodeBodyLengthMustMatch: a body shorter than its ContentLength
// is an error; a body of unknown length goes out chunked through
// Request.Write.
func TestEncodeBodyLengthMustMatch(t *testing.T) {
	req, _ := http.NewRequest("POST", "http://h/x", strings.NewReader("short"))
	req.ContentLength = 10
	if err := encode(new(bytes.Buffer), req); err == nil {
		t.Error("a body shorter than its ContentLength was encoded")
	}
	req, _ = http.NewRequest("POST", "http://h/x", io.NopCloser(strings.NewReader("unknown")))
	req.ContentLength = 0
	var buf bytes.Buffer
	if err := encode(&buf, req); err != nil {
		t.Fatal(err)
	}
	got, err := http.ReadRequest(bufio.NewReader(&buf))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(got.Body)
	if string(b) != "unknown" || len(got.TransferEncoding) == 0 {
		t.Errorf("body %q, transfer encoding %v", b, got.TransferEncoding)
	}
}

// TestEncodeAllocations: a chat request's head and body are encoded
// without an allocation.
func TestEncodeAllocations(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	req, _ := http.NewRequest("POST", "http://h/openai/deployments/d/chat/completions?api-version=2024-10-21", nil)
	req.Header = http.Header{"Api-Key": {"k"}, "Content-Type": {"application/json"}, "X-Request-Id": {"abc"}}
	req.ContentLength = int64(len(body))
	var buf bytes.Buffer
	rd := bytes.NewReader(body)
	nop := io.NopCloser(rd)
	allocs := testing.AllocsPerRun(100, func() {
		buf.Reset()
		rd.Reset(body)
		req.Body = nop
		if err := encode(&buf, req); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("%.1f allocations to encode a request, want 0", allocs)
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"http://h/x":          "h:80",
		"http://h:8000/x":     "h:8000",
		"http://[::1]/x":      "[::1]:80",
		"http://[::1]:8080/x": "[::1]:8080",
		"http://10.0.0.1/":    "10.0.0.1:80",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostPort(u); got != want {
			t.Errorf("hostPort(%s) = %q, want %q", in, got, want)
		}
	}
}
