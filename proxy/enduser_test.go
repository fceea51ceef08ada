package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/tenant"
)

// spends records the Spends of answered requests.
type spends struct {
	mu     sync.Mutex
	by     map[string]Spend // by request id
	limits []string         // of refusals: "key code limit"
}

func (s *spends) Spent(sp Spend) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.by[sp.RequestID] = sp
	return 0, false
}

func (s *spends) Refused(code string) {}

// KeyRefused records the limits of refusals at a key's limits.
func (s *spends) KeyRefused(key, code, limit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = append(s.limits, key+" "+code+" "+limit)
}

func (s *spends) endUser(t *testing.T, id string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	sp, ok := s.by[id]
	if !ok {
		t.Fatalf("no spend recorded for request %s", id)
	}
	return sp.EndUser
}

// chatAnswer is an OpenAI chat completion, which translates to Anthropic.
const chatAnswer = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

// endUserGateway is a gateway with two keys, a and b, whose end users may
// each send one request at once (end_user rpm 6), in front of an OpenAI
// upstream that records the headers it gets.
func endUserGateway(t *testing.T, keyed bool) (u string, sp *spends, upHeaders func() []http.Header, log *syncbuf.Buffer) {
	clk := fakeclock.New()
	var mu sync.Mutex
	var seen []http.Header
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	})
	sp = &spends{by: map[string]Spend{}}
	h := &Handler{Clock: clk, Spender: sp, Refusals: sp}
	lim := Limits(tenant.Limits{EndUser: tenant.EndUserLimits{RPM: 6}})
	var dir *tenant.Directory
	var limiter *tenant.Limiter
	if keyed {
		dir = tenant.NewDirectory(clk, nil)
		dir.SetConfig([]tenant.ConfigKey{
			{Secret: "sk-key-a-0123456789", Principal: tenant.Principal{ID: "a", Limits: lim}},
			{Secret: "sk-key-b-0123456789", Principal: tenant.Principal{ID: "b", Limits: lim}},
		}, nil)
		limiter = tenant.NewLimiter(clk, nil, dir.Team)
	}
	u, _ = limitedGateway(t, h, up, func(rt *Routes) {
		if keyed {
			rt.Resolver, rt.Admission = dir, limiter
		}
	})
	log = &syncbuf.Buffer{}
	h.Logger = slog.New(slog.NewTextHandler(log, nil))
	return u, sp, func() []http.Header { mu.Lock(); defer mu.Unlock(); return seen }, log
}

// Limits is tenant.Limits, named for the table below.
type Limits = tenant.Limits

type euCall struct {
	key, path, body string
	header          string // X-Switchover-End-User
}

// do sends c with request id id, and returns the status and body.
func (c euCall) do(t *testing.T, u, id string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u+c.path, strings.NewReader(c.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer sk-key-"+c.key+"-0123456789")
	}
	if c.header != "" {
		req.Header.Set(HeaderEndUser, c.header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestEndUserIsTrackedAndLimitedPerKey: the end user of an OpenAI call
// ("user"), of an Anthropic one (metadata.user_id, translated to the
// OpenAI upstream), or the header, which wins, is recorded with the
// usage and held to its key's end_user limits, apart from another key's
// end user of the same id; the refusal is a 429 in the caller's format
// naming the end user; the header does not go upstream, and the request
// log never has the end user.
func TestEndUserIsTrackedAndLimitedPerKey(t *testing.T) {
	u, sp, upHeaders, log := endUserGateway(t, true)
	chat := func(user string) string {
		return `{"model":"chat-prod","user":"` + user + `","messages":[{"role":"user","content":"hi"}]}`
	}
	messages := func(meta string) string {
		return `{"model":"chat-prod","max_tokens":5,` + meta + `"messages":[{"role":"user","content":"hi"}]}`
	}
	tests := []struct {
		name   string
		c      euCall
		status int
		want   string // the recorded end user, or the refusal's code
	}{
		{"chat user", euCall{key: "a", path: "/v1/chat/completions", body: chat("alice@example.com")}, 200, "alice@example.com"},
		{"the same end user at once", euCall{key: "a", path: "/v1/chat/completions", body: chat("alice@example.com")}, 429, "rate_limit_exceeded"},
		{"the same id of another key", euCall{key: "b", path: "/v1/chat/completions", body: chat("alice@example.com")}, 200, "alice@example.com"},
		{"the header wins over the body", euCall{key: "a", path: "/v1/chat/completions", body: chat("alice@example.com"), header: "bob"}, 200, "bob"},
		{"the header on a translated call", euCall{key: "a", path: "/v1/messages", body: messages(""), header: "carol"}, 200, "carol"},
		{"a translated call over its end user's limit", euCall{key: "a", path: "/v1/messages", body: messages(""), header: "carol"}, 429, "rate_limit_exceeded"},
		{"anthropic metadata.user_id", euCall{key: "a", path: "/v1/messages", body: messages(`"metadata":{"user_id":"dave"},`)}, 200, "dave"},
		{"no end user", euCall{key: "a", path: "/v1/chat/completions", body: chatBody}, 200, ""},
		{"no end user again: not limited", euCall{key: "a", path: "/v1/chat/completions", body: chatBody}, 200, ""},
		{"too long", euCall{key: "a", path: "/v1/chat/completions", body: chat(strings.Repeat("x", tenant.MaxEndUser+1))}, 400, "end_user_too_long"},
		{"the longest", euCall{key: "a", path: "/v1/chat/completions", body: chat(strings.Repeat("y", tenant.MaxEndUser))}, 200, strings.Repeat("y", tenant.MaxEndUser)},
		{"a control character", euCall{key: "a", path: "/v1/chat/completions", body: chat(`eve\u0000`)}, 400, "invalid_end_user"},
		{"too long in the header, anthropic format", euCall{key: "a", path: "/v1/messages", body: messages(""), header: strings.Repeat("z", tenant.MaxEndUser+1)}, 400, "end_user_too_long"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := "eu-" + string(rune('a'+i))
			st, b := tc.c.do(t, u, id)
			if st != tc.status {
				t.Fatalf("status %d, want %d: %s", st, tc.status, b)
			}
			if st == http.StatusOK {
				if got := sp.endUser(t, id); got != tc.want {
					t.Fatalf("recorded end user %q, want %q", got, tc.want)
				}
				return
			}
			anthropic := tc.c.path == "/v1/messages"
			var eb struct {
				Type  string `json:"type"`
				Error struct {
					Type  string `json:"type"`
					Code  string `json:"code"`
					Limit *struct {
						Subject, Name string
					} `json:"switchover_limit"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &eb); err != nil {
				t.Fatalf("error body %s: %v", b, err)
			}
			if anthropic != (eb.Type == "error") {
				t.Fatalf("error body not in the caller's format: %s", b)
			}
			if !anthropic && eb.Error.Code != tc.want {
				t.Fatalf("error code %q, want %q: %s", eb.Error.Code, tc.want, b)
			}
			if anthropic && st == http.StatusBadRequest && (eb.Error.Type != "invalid_request_error" || !bytes.Contains(b, []byte(HeaderEndUser))) {
				t.Fatalf("error body does not say what is wrong: %s", b)
			}
			if st == http.StatusTooManyRequests && !anthropic && (eb.Error.Limit == nil || eb.Error.Limit.Subject != "end_user" || eb.Error.Limit.Name != "alice@example.com") {
				t.Fatalf("switchover_limit does not name the end user: %s", b)
			}
		})
	}
	for _, h := range upHeaders() {
		if h.Get(HeaderEndUser) != "" {
			t.Fatalf("the end-user header went upstream: %v", h)
		}
	}
	sp.mu.Lock()
	refused := strings.Join(sp.limits, ", ")
	sp.mu.Unlock()
	if want := "a rate_limit_exceeded end user requests per minute, a rate_limit_exceeded end user requests per minute"; refused != want {
		t.Errorf("refusals counted: %s; want %s", refused, want)
	}
	if !strings.Contains(log.String(), "request_id=eu-a") {
		t.Fatalf("no request line in the log:\n%s", log.String())
	}
	for _, who := range []string{"alice", "bob", "carol", "dave"} {
		if strings.Contains(log.String(), who) {
			t.Fatalf("the request log names end user %s:\n%s", who, log.String())
		}
	}
}

// TestEndUserWithoutKeys: a gateway without keys records the end user,
// and has no end-user limits to apply.
func TestEndUserWithoutKeys(t *testing.T) {
	u, sp, _, _ := endUserGateway(t, false)
	c := euCall{path: "/v1/chat/completions", body: `{"model":"chat-prod","user":"alice","messages":[]}`}
	for _, id := range []string{"nk-1", "nk-2"} {
		if st, b := c.do(t, u, id); st != http.StatusOK {
			t.Fatalf("%s: %d %s", id, st, b)
		}
		if got := sp.endUser(t, id); got != "alice" {
			t.Fatalf("%s: recorded end user %q", id, got)
		}
	}
}
