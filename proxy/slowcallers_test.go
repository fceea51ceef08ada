package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/tenant"
)

// The attacks of issue 23, medium 7: one key's slow bodies held every
// request slot and all the memory for bodies, and its max_concurrent was
// checked only once a body had arrived. Each test attacks through the
// HTTP listener with a bounded number of raw connections, each declaring
// a body and sending a byte of it.

const (
	slowSecret = "sk-slow-caller-0123456789"
	goodSecret = "sk-good-caller-0123456789"
	capSecret  = "sk-capped-caller-012345678"
)

// slowGateway serves h over loopback with keys "slow", "good" and
// "capped" (max_concurrent 2) in a tenant.Directory, an upstream that
// answers at once, and routes adjusted by limits. It returns the
// listener's address.
func slowGateway(t *testing.T, h *Handler, limits ...func(*Routes)) string {
	t.Helper()
	clk := fakeclock.New()
	if h.Clock == nil {
		h.Clock = clk
	}
	dir := tenant.NewDirectory(clk, nil)
	dir.SetConfig([]tenant.ConfigKey{
		{Secret: slowSecret, Principal: tenant.Principal{ID: "slow"}},
		{Secret: goodSecret, Principal: tenant.Principal{ID: "good"}},
		{Secret: capSecret, Principal: tenant.Principal{ID: "capped", Limits: tenant.Limits{MaxConcurrent: 2}}},
	}, nil)
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"1","object":"chat.completion","choices":[]}`)
	})
	u, _ := limitedGateway(t, h, up, append([]func(*Routes){func(rt *Routes) {
		rt.Resolver, rt.Admission = dir, tenant.NewLimiter(clk, nil, dir.Team)
	}}, limits...)...)
	return strings.TrimPrefix(u, "http://")
}

// trickle opens a connection to addr and sends a POST to path that
// declares a body of declared bytes, with the key secret ("" for none),
// and then first, the start of the body. The connection is closed when
// the test ends.
func trickle(t *testing.T, addr, path, secret string, declared int, first string) net.Conn {
	t.Helper()
	return trickleMethod(t, http.MethodPost, addr, path, secret, declared, first)
}

// trickleMethod is trickle with another method.
func trickleMethod(t *testing.T, method, addr, path, secret string, declared int, first string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	auth := ""
	if secret != "" {
		auth = "Authorization: Bearer " + secret + "\r\n"
	}
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: gateway\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", method, path, auth, declared, first)
	return c
}

// answer is what a raw connection was answered.
type answer struct {
	status int
	closes bool // the answer says Connection: close
	err    errorBody
}

// readAnswer reads the answer on c. The answer to a request refused
// before its body is read comes without the body: a connection that is
// not answered within the bound fails the test (a bound for a broken
// gateway, not a latency asserted).
func readAnswer(t *testing.T, c net.Conn) answer {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer before the body was sent: %v", err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, closes: resp.Close}
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &a.err)
	return a
}

// chatFrom sends a whole chat call with secret and returns its status.
func chatFrom(t *testing.T, addr, secret string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// heldBy waits until key has n requests in flight holding memory bytes of
// body memory.
func heldBy(t *testing.T, h *Handler, key string, n int, memory int64) {
	t.Helper()
	poll.Until(t, 10*time.Second, func() bool {
		got, mem := h.keys.inFlight(key)
		return got == n && mem == memory
	}, func() string {
		got, mem := h.keys.inFlight(key)
		return fmt.Sprintf("key %s holds %d requests and %d bytes, want %d and %d", key, got, mem, n, memory)
	})
}

// Regression (issue 23, medium 7): 8 connections declaring 32 MiB and
// sending a byte a second took all of max_body_memory, and 20 of 20 other
// requests failed 503 request_body_memory_full. A key holds at most its
// share; its next trickling body is refused unread, and another key's
// calls go through.
func TestSlowKeyTricklingBodiesCannotTakeAllBodyMemory(t *testing.T) {
	const declared = 256 << 10
	h := &Handler{BodyReadTimeout: time.Minute}
	addr := slowGateway(t, h, func(rt *Routes) {
		rt.MaxBodyMemory, rt.MaxBodyMemoryPerKey = 8*declared, 4*declared
	})
	for i := range 4 {
		trickle(t, addr, "/v1/chat/completions", slowSecret, declared, "{")
		heldBy(t, h, "slow", i+1, int64(i+1)*declared)
	}
	for range 4 {
		a := readAnswer(t, trickle(t, addr, "/v1/chat/completions", slowSecret, declared, "{"))
		if a.status != http.StatusTooManyRequests || a.err.Error.Code != "rate_limit_exceeded" || !a.closes {
			t.Fatalf("the slow key's body past its share: %+v; want 429 rate_limit_exceeded, Connection: close", a)
		}
	}
	for i := range 20 {
		if got := chatFrom(t, addr, goodSecret); got != http.StatusOK {
			t.Fatalf("another key's call %d while the slow key trickles: %d", i, got)
		}
	}
	heldBy(t, h, "slow", 4, 4*declared)
}

// Regression (issue 23, medium 7): 2,100 slow connections of one key took
// every server.max_concurrent_requests slot, and 10 of 10 other requests
// failed too_many_concurrent_requests. A key holds at most its share of
// the slots, taken before its body is read.
func TestSlowKeyTricklingBodiesCannotTakeEverySlot(t *testing.T) {
	h := &Handler{BodyReadTimeout: time.Minute}
	addr := slowGateway(t, h, func(rt *Routes) {
		rt.MaxConcurrentRequests, rt.MaxConcurrentPerKey = 24, 12
	})
	for i := range 12 {
		trickle(t, addr, "/v1/chat/completions", slowSecret, 1000, "{")
		heldBy(t, h, "slow", i+1, 0)
	}
	for range 18 {
		a := readAnswer(t, trickle(t, addr, "/v1/chat/completions", slowSecret, 1000, "{"))
		if a.status != http.StatusTooManyRequests || a.err.Error.Code != "rate_limit_exceeded" || !a.closes {
			t.Fatalf("the slow key's request past its share: %+v; want 429 rate_limit_exceeded, Connection: close", a)
		}
	}
	for i := range 10 {
		if got := chatFrom(t, addr, goodSecret); got != http.StatusOK {
			t.Fatalf("another key's call %d while the slow key trickles: %d", i, got)
		}
	}
}

// Regression (issue 23, medium 7): a key's max_concurrent was checked
// after its body had arrived, so its slow bodies held slots past it. Now
// a request past it is answered 429 before a byte of its body is read.
func TestKeyMaxConcurrentRefusesBeforeItsBodyIsRead(t *testing.T) {
	h := &Handler{BodyReadTimeout: time.Minute}
	addr := slowGateway(t, h)
	first := trickle(t, addr, "/v1/chat/completions", capSecret, 1000, "{")
	trickle(t, addr, "/v1/chat/completions", capSecret, 1000, "{")
	heldBy(t, h, "capped", 2, 0)
	// The third sends its headers and nothing of its body.
	a := readAnswer(t, trickle(t, addr, "/v1/chat/completions", capSecret, 1000, ""))
	if a.status != http.StatusTooManyRequests || a.err.Error.Code != "rate_limit_exceeded" || !a.closes {
		t.Fatalf("the third request of a key with max_concurrent 2: %+v; want 429 before its body", a)
	}
	if got := chatFrom(t, addr, goodSecret); got != http.StatusOK {
		t.Fatalf("another key's call: %d", got)
	}
	first.Close() // its client gone, the request ends and gives back its place
	heldBy(t, h, "capped", 1, 0)
	if got := chatFrom(t, addr, capSecret); got != http.StatusOK {
		t.Fatalf("the capped key's call once a place is free: %d", got)
	}
}

// Regression (issue 23, medium 7): a caller without a valid key took a
// request slot before its key was checked, and its 401 waited while
// net/http read the rest of its body, however slowly it came: callers
// without a key could hold every slot. It gets 401 before its body is
// read, the connection closes, and it holds nothing.
func TestNoKeyCallersHoldingConnectionsGet401AndHoldNothing(t *testing.T) {
	for _, tt := range []struct{ name, secret string }{{"no key", ""}, {"wrong key", "sk-wrong-0123456789abcdef"}} {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{BodyReadTimeout: time.Minute}
			addr := slowGateway(t, h, func(rt *Routes) { rt.MaxConcurrentRequests = 4 })
			var conns []net.Conn
			for range 12 {
				c := trickle(t, addr, "/v1/chat/completions", tt.secret, 1000, "{")
				conns = append(conns, c)
				a := readAnswer(t, c)
				if a.status != http.StatusUnauthorized || a.err.Error.Code != "invalid_api_key" || !a.closes {
					t.Fatalf("a caller %s: %+v; want 401 invalid_api_key, Connection: close", tt.name, a)
				}
			}
			for _, c := range conns {
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
					t.Fatalf("after the 401 the connection was not closed: %d, %v", n, err)
				}
			}
			poll.Until(t, 10*time.Second, func() bool { return h.inflight.n.Load() == 0 && h.bodies.inUse() == 0 },
				func() string {
					return fmt.Sprintf("%d slots and %d bytes held", h.inflight.n.Load(), h.bodies.inUse())
				})
			if got := chatFrom(t, addr, goodSecret); got != http.StatusOK {
				t.Fatalf("a key's call after the callers %s: %d", tt.name, got)
			}
		})
	}
}

// Regression (issue 23, medium 7): a body that stalls is ended once it
// falls under server.min_body_rate after server.read_timeout: 408
// request_timeout, in the caller's format, and its slot, its key's place
// and its memory are given back at once.
func TestStalledBodyIsEndedWith408AndGivesBackItsSlot(t *testing.T) {
	for _, tt := range []struct{ name, path, wantType string }{
		{"OpenAI format", "/v1/chat/completions", "invalid_request_error"},
		{"Anthropic format", "/v1/messages", "invalid_request_error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := fakeclock.New()
			const grace = 10 * time.Second
			h := &Handler{BodyReadTimeout: grace, Clock: clk}
			addr := slowGateway(t, h, func(rt *Routes) { rt.MinBodyRate, rt.MaxBodyMemory = 1000, 1<<20 })
			c := trickle(t, addr, tt.path, slowSecret, 100_000, `{"model":"chat-prod",`)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := clk.BlockUntilTimer(ctx, grace); err != nil {
				t.Fatalf("the body's deadline was never armed: %v", err)
			}
			heldBy(t, h, "slow", 1, 0) // its key has no share set: only the server's count
			if h.bodies.inUse() != 100_000 {
				t.Fatalf("body memory in use %d, want the declared 100000", h.bodies.inUse())
			}
			clk.Advance(grace + time.Second) // 21 bytes were owed 1,000 a second
			a := readAnswer(t, c)
			if a.status != http.StatusRequestTimeout || !a.closes {
				t.Fatalf("a stalled body: %+v; want 408, Connection: close", a)
			}
			if tt.path == "/v1/chat/completions" && (a.err.Error.Code != "request_timeout" || a.err.Error.Type != tt.wantType) {
				t.Fatalf("a stalled body: %+v; want request_timeout", a.err)
			}
			if tt.path == "/v1/messages" && a.err.Type != "error" {
				t.Fatalf("a stalled body on /v1/messages: %+v; want Anthropic's error", a.err)
			}
			heldBy(t, h, "slow", 0, 0)
			poll.Until(t, 10*time.Second, func() bool { return h.inflight.n.Load() == 0 && h.bodies.inUse() == 0 }, nil)
		})
	}
}

// Regression (issue 23, medium 7): a path that takes no body (the model
// list, a stored response) answered a request that sent one anyway only
// once net/http had read that body, however slowly it came, the request
// holding its slot meanwhile. The answer goes out at once, the body
// unread, and the connection closes.
func TestTricklingBodyOnAPathWithoutBodyHoldsNoSlot(t *testing.T) {
	h := &Handler{BodyReadTimeout: time.Minute}
	addr := slowGateway(t, h, func(rt *Routes) { rt.MaxConcurrentRequests = 2 })
	for range 6 {
		c := trickleMethod(t, http.MethodGet, addr, "/v1/models", goodSecret, 1000, "x")
		if a := readAnswer(t, c); a.status != http.StatusOK || !a.closes {
			t.Fatalf("the model list with a trickling body: %+v; want 200 and Connection: close", a)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("after the answer the connection was not closed: %d, %v", n, err)
		}
	}
	poll.Until(t, 10*time.Second, func() bool { return h.inflight.n.Load() == 0 }, nil)
	if got := chatFrom(t, addr, goodSecret); got != http.StatusOK {
		t.Fatalf("a call after the model lists: %d", got)
	}
}
