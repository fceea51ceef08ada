package route

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
)

// writeCountingConn counts the writes made on a connection.
type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestUpstreamRequestFromGetBodyLeavesInOneWrite guards that the body
// GetBody gives, which net/http sends when it replays a request on
// another connection (a reused one the backend had closed), goes out in
// the same single write as headers, like the first body does.
func TestUpstreamRequestFromGetBodyLeavesInOneWrite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	tr := NewTransport(TransportSettings{})
	defer tr.CloseIdleConnections()
	dial, writes := tr.DialContext, new(atomic.Int64)
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCountingConn{Conn: c, writes: writes}, nil
	}
	p := &OpenAI{BaseURL: parseURL(t, srv.URL+"/v1"), APIKey: "sk-test"}
	o := &Outgoing{Op: ChatCompletions, Model: "m", Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)}
	req := sent(t, p, o)
	send := func(what string, req *http.Request) {
		t.Helper()
		before := writes.Load()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n := writes.Load() - before; n != 1 {
			t.Fatalf("%s went upstream in %d writes, want 1", what, n)
		}
	}
	send("the request", req)
	again := req.Clone(t.Context())
	body, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	again.Body = body
	send("the request with the body of GetBody", again)
}

// TestNewUpstreamAllocations guards the allocations of building a chat
// request with a usual header set: the header map (two), the URL, body
// reader and header values together (one), the body's NopCloser (one),
// GetBody (one) and the request (one). The NopCloser that keeps the
// request in one write is paid for by the header values' array.
func TestNewUpstreamAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := &OpenAI{BaseURL: parseURL(t, "https://api.example.com/v1"), APIKey: "sk-test"}
	o := &Outgoing{Op: ChatCompletions, Model: "m", Body: []byte(`{"model":"m"}`), Header: http.Header{
		"X-Request-Id": {"req-1"}, "User-Agent": {"sdk/1.0"}, "X-Stainless-Lang": {"python"},
	}}
	ctx := t.Context()
	sent(t, p, o) // the target cached
	if n := testing.AllocsPerRun(100, func() { p.NewRequest(ctx, o) }); n > 6 {
		t.Errorf("NewRequest allocates %v times, want at most 6", n)
	}
}

// TestNewUpstreamManyHeaderValues: past the values the request holds in
// its own allocation, headers get an array of their own, all still sent.
func TestNewUpstreamManyHeaderValues(t *testing.T) {
	p := &OpenAI{BaseURL: parseURL(t, "https://api.example.com/v1"), APIKey: "sk-test", Organization: "org-1"}
	h := http.Header{}
	want := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-test"}, "Openai-Organization": {"org-1"}}
	for i := range 12 {
		k := "X-Caller-" + string(rune('A'+i))
		h[k] = []string{k + "-1", k + "-2"}
		want[k] = h[k]
	}
	req := sent(t, p, &Outgoing{Op: ChatCompletions, Model: "m", Body: []byte(`{}`), Header: h})
	if len(req.Header) != len(want) {
		t.Errorf("%d headers, want %d: %v", len(req.Header), len(want), req.Header)
	}
	for k, vv := range want {
		if !slices.Equal(req.Header[k], vv) {
			t.Errorf("%s: %q, want %q", k, req.Header[k], vv)
		}
	}
}
