package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
	"github.com/switchover-gw/switchover/translate"
)

var update = flag.Bool("update", false, "rewrite testdata/answers.golden")

// answerTenants is a KeyResolver and an Admission whose answers the
// secret picks: "revoked", "expired", "down" (the store cannot say),
// "unknown"; any other secret is a key of that ID, refused at the limit
// its ID names (rpm, tpm, budget, model, concurrent) or admitted.
type answerTenants struct{}

func (answerTenants) Required() bool { return true }

func (answerTenants) Authenticate(_ context.Context, secret string) (*tenant.Principal, error) {
	switch secret {
	case "revoked":
		return nil, tenant.ErrRevoked
	case "expired":
		return nil, tenant.ErrExpired
	case "down":
		return nil, errors.New("the store is down")
	case "", "unknown":
		return nil, tenant.ErrUnknownKey
	}
	return &tenant.Principal{ID: secret, Team: "team-a"}, nil
}

func (answerTenants) AdmitAsk(p *tenant.Principal, a tenant.Ask) (*tenant.Ticket, *tenant.Refusal) {
	pool, model, tokens := a.Pool, a.Model, a.Tokens
	reset := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	switch p.ID {
	case "rpm":
		return nil, &tenant.Refusal{Status: 429, Code: "rate_limit_exceeded", Subject: "key", Name: "rpm", Limit: "requests per minute",
			Max: 60, Used: 10, Remaining: 0, Reset: reset, RetryAfter: 1500 * time.Millisecond, Message: "switchover: key rpm is over its requests per minute"}
	case "tpm":
		return nil, &tenant.Refusal{Status: 429, Code: "rate_limit_exceeded", Subject: "team", Name: "team-a", Limit: "tokens per minute",
			Max: 1000, Used: 990, Remaining: -5, Reset: reset, RetryAfter: 250 * time.Millisecond, Message: fmt.Sprintf("switchover: %s %q for %d tokens", pool, model, tokens)}
	case "budget":
		return nil, &tenant.Refusal{Status: 429, Code: "budget_exceeded", Subject: "team", Name: "team-a", Limit: "budget",
			Max: 100, Used: 100.5, Reset: reset, RetryAfter: 48 * time.Hour, Message: "switchover: team team-a is over its budget"}
	case "model":
		return nil, &tenant.Refusal{Status: 403, Code: "model_not_allowed", Subject: "key", Name: "model", Limit: "model",
			Message: fmt.Sprintf("switchover: key model may not use %q", model)}
	case "concurrent":
		return nil, &tenant.Refusal{Status: 429, Code: "rate_limit_exceeded", Subject: "key", Name: "concurrent", Limit: "concurrent requests",
			Max: 2, Used: 2, Message: "switchover: key concurrent has as many requests in flight as it may"}
	}
	return nil, nil
}

var (
	_ KeyResolver = answerTenants{}
	_ Admission   = answerTenants{}
)

// countRefusals records refusals as lines of text.
type countRefusals struct{ b *syncbuf.Buffer }

func (c countRefusals) Refused(code string) { fmt.Fprintf(c.b, "refused %s\n", code) }
func (c countRefusals) KeyRefused(key, code, limit string) {
	fmt.Fprintf(c.b, "key refused %s %s %s\n", key, code, limit)
}

// answerCase is one request of TestErrorAnswers.
type answerCase struct {
	name         string
	method, path string
	header       map[string]string
	body         string
	chunked      bool
	declared     int64 // a Content-Length sent without the body
	setup        func(g *answersGateway)
}

// answersGateway is a Handler with the pools the cases use, behind a
// server whose ended channel receives each request's end.
type answersGateway struct {
	h     *Handler
	url   string
	ended chan struct{}
	logs  *syncbuf.Buffer
	count *syncbuf.Buffer
	owner *route.Backend // the backend of pool "owned", drained by a case

	logsRead, countRead int         // how much of logs and count the cases have shown
	header              http.Header // the last answer's header as the handler left it
}

func newAnswersGateway(t *testing.T, tenants bool, ready bool) *answersGateway {
	t.Helper()
	g := &answersGateway{ended: make(chan struct{}, 1), logs: &syncbuf.Buffer{}, count: &syncbuf.Buffer{}}
	g.h = &Handler{Logger: slog.New(slog.NewJSONHandler(g.logs, nil)), Refusals: countRefusals{g.count}}
	rt := g.routes(t)
	if tenants {
		rt.Resolver, rt.Admission = answerTenants{}, answerTenants{}
	} else {
		rt.Keys = []Key{NewKey("app", "app-key")}
	}
	if ready {
		g.h.Update(rt)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			g.header = w.Header().Clone()
			g.ended <- struct{}{}
		}()
		g.h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

// routes are the cases' pools: chat-prod (and its alias) answers;
// sse-break and plain-break break their answers after the first bytes;
// owned's backend is g.owner; benched's breaker is open for an hour.
func (g *answersGateway) routes(t *testing.T) *Routes {
	backend := func(name string, up http.HandlerFunc) *route.Backend {
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		base, _ := url.Parse(srv.URL + "/v1")
		return &route.Backend{Name: name, Provider: &route.OpenAI{BaseURL: base},
			Breaker: breaker.New(name, breaker.Settings{Failures: 100, Trip: time.Minute})}
	}
	answer := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"1","object":"chat.completion","choices":[]}`)
	}
	breakAfter := func(contentType, length, start string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", contentType)
			if length != "" {
				w.Header().Set("Content-Length", length)
			}
			io.WriteString(w, start)
			w.(http.Flusher).Flush()
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}
	}
	ok := backend("up", answer)
	sseBreak := backend("sse-break", breakAfter("text/event-stream", "",
		"data: {\"id\":\"1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"))
	plainBreak := backend("plain-break", breakAfter("application/json", "500", `{"id":"1","object":"chat.completion","choices":[`))
	g.owner = backend("owner", answer)
	benched := backend("benched", answer)
	benched.Breaker.Force(breaker.Open, time.Now().Add(time.Hour), breaker.KindManual, "test")
	pool := func(name string, b *route.Backend) *route.Pool {
		return &route.Pool{Name: name, Members: []*route.Member{{Backend: b, Priority: 1}}}
	}
	chat := pool("chat-prod", ok)
	return &Routes{
		Pools: map[string]*route.Pool{"chat-prod": chat, "alias": chat, "sse-break": pool("sse-break", sseBreak),
			"plain-break": pool("plain-break", plainBreak), "owned": pool("owned", g.owner),
			"benched": pool("benched", benched)},
		MaxBody: 1 << 10,
		Pinned:  []Pinned{{Path: "files", Pool: pool("files", ok)}, {Path: "messages/batches", Pool: pool("batches", ok)}},
	}
}

var (
	msPattern   = regexp.MustCompile(`\b\d+ms\b`)
	portPattern = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	hourPattern = regexp.MustCompile(`(Retry-After-Ms: )3(599\d{3}|600000)\b`)
)

func (g *answersGateway) do(t *testing.T, c answerCase) string {
	t.Helper()
	if c.setup != nil {
		c.setup(g)
	}
	out := g.send(t, c)
	select {
	case <-g.ended:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the handler never returned", c.name)
	}
	keys := make([]string, 0, len(g.header))
	for k := range g.header {
		if k != "Date" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out += fmt.Sprintf("header %s: %s\n", k, strings.Join(g.header[k], ", "))
	}
	out += g.newLogs(t)
	counts := g.count.String()
	out += counts[g.countRead:]
	g.countRead = len(counts)
	out = msPattern.ReplaceAllString(out, "Nms")
	out = portPattern.ReplaceAllString(out, "127.0.0.1:PORT")
	return hourPattern.ReplaceAllString(out, "${1}about an hour")
}

// send sends c's request and returns what the client got.
func (g *answersGateway) send(t *testing.T, c answerCase) string {
	var body io.Reader = strings.NewReader(c.body)
	switch {
	case c.declared > 0:
		pr, pw := io.Pipe()
		t.Cleanup(func() { pw.Close() })
		body = pr
	case c.chunked:
		body = io.MultiReader(body)
	}
	req, _ := http.NewRequest(c.method, g.url+c.path, body)
	if c.declared > 0 {
		req.ContentLength = c.declared
	}
	req.Header.Set("X-Request-Id", "req-"+strings.ReplaceAll(c.name, " ", "-"))
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Sprintf("error: %v\n", errors.Unwrap(err) != nil)
	}
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	out := fmt.Sprintf("status: %d\nbody: %s\n", resp.StatusCode, strings.TrimRight(string(b), "\n"))
	if rerr != nil {
		out += fmt.Sprintf("body cut short: %v\n", rerr)
	}
	return out
}

// newLogs returns the log lines written since the last call, one
// "log: key=value …" line each, in key order, without their times.
func (g *answersGateway) newLogs(t *testing.T) string {
	logs := g.logs.String()
	lines := logs[g.logsRead:]
	g.logsRead = len(logs)
	var out strings.Builder
	for _, ln := range strings.Split(strings.TrimSpace(lines), "\n") {
		if ln == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("log line %q: %v", ln, err)
		}
		delete(m, "time")
		delete(m, "duration_ms")
		delete(m, "first_byte_ms")
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out.WriteString("log:")
		for _, k := range keys {
			fmt.Fprintf(&out, " %s=%v", k, m[k])
		}
		out.WriteString("\n")
	}
	return out.String()
}

const answerChat = `{"model":"chat-prod","messages":[{"role":"user","content":"hello"}]}`

// answerMessages is an Anthropic messages call: answerChat with the
// max_tokens Anthropic requires.
const answerMessages = `{"model":"chat-prod","max_tokens":64,"messages":[{"role":"user","content":"hello"}]}`

// answerKey is the headers of a call with the gateway's key.
var answerKey = map[string]string{"Authorization": "Bearer app-key", "Content-Type": "application/json"}

// withKey is answerKey with more headers, given as name, value pairs.
func withKey(kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range answerKey {
		m[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

var answerUpgrade = withKey("Connection", "Upgrade", "Upgrade", "websocket")

func taggedResponse(backend string) string { return signedFor("app", "resp_abc", backend) }
func taggedFile(backend string) string     { return signedFor("app", "file-abc", backend) }

// signedFor is id tagged with backend as an object of key.
func signedFor(key, id, backend string) string {
	return (&route.Tagger{Tenant: "k:" + key}).Tag(id, backend)
}

// keyAnswerCases run on a gateway with a key in its configuration.
var keyAnswerCases = []answerCase{
	{name: "unknown route", method: "POST", path: "/v1/no/such/route", body: "{}"},
	{name: "conversations without a pinned route", method: "POST", path: "/v1/conversations", body: "{}"},
	{name: "unknown metrics", method: "GET", path: "/metrics"},
	{name: "wrong method", method: "DELETE", path: "/v1/chat/completions"},
	{name: "list of stored chats", method: "GET", path: "/v1/chat/completions", header: answerKey},
	{name: "wrong method on a stored chat", method: "PUT", path: "/v1/chat/completions/chatcmpl-1", header: answerKey},
	{name: "unknown stored chat", method: "GET", path: "/v1/chat/completions/chatcmpl-1", header: answerKey},
	{name: "wrong method on a response", method: "PUT", path: "/v1/responses/resp_1", header: answerKey},
	{name: "wrong method anthropic", method: "GET", path: "/v1/messages"},
	{name: "no key", method: "POST", path: "/v1/chat/completions", body: answerChat},
	{name: "no key anthropic", method: "POST", path: "/v1/messages", body: answerMessages},
	{name: "wrong key", method: "POST", path: "/v1/chat/completions", body: answerChat, header: map[string]string{"Authorization": "Bearer nope"}},
	{name: "unknown model listed", method: "GET", path: "/v1/models/nope", header: answerKey},
	{name: "model listed", method: "GET", path: "/v1/models/chat-prod", header: answerKey},
	{name: "at the concurrency cap", method: "POST", path: "/v1/chat/completions", body: answerChat, header: answerKey,
		setup: func(g *answersGateway) {
			h := g.h
			rt := *h.routes.Load()
			rt.MaxConcurrentRequests = 1
			h.Update(&rt)
			h.inflight.acquire(0)
		}},
	{name: "at the concurrency cap anthropic", method: "POST", path: "/v1/messages", body: answerMessages, header: answerKey},
	{name: "below the cap again", method: "POST", path: "/v1/chat/completions", body: answerChat, header: answerKey,
		setup: func(g *answersGateway) {
			h := g.h
			h.inflight.release()
			rt := *h.routes.Load()
			rt.MaxConcurrentRequests = 0
			h.Update(&rt)
		}},
	{name: "declared body over max", method: "POST", path: "/v1/chat/completions", header: answerKey, declared: 4 << 10},
	{name: "chunked body over max", method: "POST", path: "/v1/chat/completions", header: answerKey, chunked: true, body: strings.Repeat("x", 2<<10)},
	{name: "body memory full", method: "POST", path: "/v1/messages", header: answerKey, body: answerMessages,
		setup: func(g *answersGateway) {
			h := g.h
			rt := *h.routes.Load()
			rt.MaxBodyMemory = 100
			h.Update(&rt)
			h.bodies.used.Add(95)
		}},
	{name: "body memory full chunked", method: "POST", path: "/v1/chat/completions", header: answerKey, body: answerChat, chunked: true},
	{name: "body memory free again", method: "POST", path: "/v1/chat/completions", header: answerKey, body: answerChat,
		setup: func(g *answersGateway) {
			h := g.h
			h.bodies.used.Add(-95)
			rt := *h.routes.Load()
			rt.MaxBodyMemory = 0
			h.Update(&rt)
		}},
	{name: "invalid json", method: "POST", path: "/v1/chat/completions", header: answerKey, body: "{"},
	{name: "invalid json anthropic", method: "POST", path: "/v1/messages", header: answerKey, body: "{"},
	{name: "responses under an azure deployment", method: "POST", path: "/openai/deployments/chat-prod/responses?api-version=2025-04-01-preview",
		header: answerKey, body: answerChat},
	{name: "messages without max_tokens", method: "POST", path: "/v1/messages", header: answerKey, body: answerChat},
	{name: "messages with a max_tokens not an integer", method: "POST", path: "/v1/messages", header: answerKey,
		body: `{"model":"chat-prod","max_tokens":"64","messages":[{"role":"user","content":"hello"}]}`},
	{name: "owners conflict", method: "POST", path: "/v1/responses", header: answerKey,
		body: `{"model":"chat-prod","previous_response_id":"` + taggedResponse("a") + `","input":[{"type":"item_reference","id":"` + signedFor("app", "msg_1", "b") + `"}]}`},
	{name: "invalid multipart", method: "POST", path: "/v1/audio/transcriptions", header: withKey("Content-Type", "text/plain"), body: "x"},
	{name: "invalid max wait", method: "POST", path: "/v1/chat/completions", header: withKey(HeaderMaxWait, "soon"), body: answerChat},
	{name: "missing model", method: "POST", path: "/v1/chat/completions", header: answerKey, body: `{"messages":[]}`},
	{name: "unknown model", method: "POST", path: "/v1/chat/completions", header: answerKey, body: `{"model":"nope","messages":[]}`},
	{name: "unknown deployment", method: "POST", path: "/openai/deployments/nope/chat/completions?api-version=1", header: answerKey, body: answerChat},
	{name: "token estimate", method: "POST", path: "/v1/messages/count_tokens", header: answerKey,
		body: `{"model":"chat-prod","messages":[{"role":"user","content":"hello there"}]}`},
	{name: "token estimate of a bad body", method: "POST", path: "/v1/messages/count_tokens", header: answerKey,
		body: `{"model":"chat-prod","messages":5}`},
	{name: "owner drained", method: "POST", path: "/v1/responses", header: answerKey,
		body:  `{"model":"owned","previous_response_id":"` + taggedResponse("owner") + `","input":"hi"}`,
		setup: func(g *answersGateway) { g.owner.Drain() }},
	{name: "owner benched", method: "POST", path: "/v1/responses", header: answerKey,
		body: `{"model":"benched","previous_response_id":"` + taggedResponse("benched") + `","input":"hi"}`},
	{name: "response id not tagged", method: "GET", path: "/v1/responses/resp_1", header: answerKey},
	{name: "response of a gone backend", method: "GET", path: "/v1/responses/" + taggedResponse("gone"), header: answerKey},
	{name: "response sub-path unknown", method: "GET", path: "/v1/responses/" + taggedResponse("up") + "/nope", header: answerKey},
	{name: "pinned owners conflict in the query", method: "GET", path: "/v1/files?after=" + taggedFile("a") + "&after=" + taggedFile("b"), header: answerKey},
	{name: "pinned owners conflict in the path", method: "GET", path: "/v1/files/" + taggedFile("a") + "?after=" + taggedFile("b"), header: answerKey},
	{name: "pinned owners conflict in the body", method: "POST", path: "/v1/files", header: answerKey,
		body: `{"file_id":"` + taggedFile("a") + `","input_file_id":"` + taggedFile("b") + `"}`},
	{name: "pinned owner unreachable", method: "GET", path: "/v1/files/" + taggedFile("gone"), header: answerKey},
	{name: "pinned batches body too big", method: "POST", path: "/v1/messages/batches", header: answerKey, body: strings.Repeat("x", 2<<10)},
	{name: "realtime without upgrade", method: "GET", path: "/v1/realtime?model=chat-prod", header: answerKey},
	{name: "realtime without model", method: "GET", path: "/v1/realtime", header: answerUpgrade},
	{name: "realtime unknown model", method: "GET", path: "/v1/realtime?model=nope", header: answerUpgrade},
	{name: "stream broken mid-way", method: "POST", path: "/v1/chat/completions", header: answerKey,
		body: `{"model":"sse-break","stream":true,"messages":[{"role":"user","content":"hello"}]}`},
	{name: "responses stream broken mid-way", method: "POST", path: "/v1/responses", header: answerKey,
		body: `{"model":"sse-break","stream":true,"input":"hello"}`},
	{name: "audio cut short", method: "POST", path: "/v1/audio/speech", header: answerKey,
		body: `{"model":"plain-break","input":"hello","voice":"alloy"}`},
	{name: "realtime refused upstream", method: "GET", path: "/v1/realtime?model=chat-prod", header: answerUpgrade},
	{name: "gemini no key", method: "POST", path: "/v1beta/models/chat-prod:generateContent", body: answerGemini},
	{name: "gemini wrong key in the query", method: "POST", path: "/v1beta/models/chat-prod:generateContent?key=nope&alt=json", body: answerGemini},
	{name: "gemini wrong method", method: "GET", path: "/v1beta/models/chat-prod:generateContent", header: answerGeminiKey},
	{name: "gemini unknown method", method: "POST", path: "/v1beta/models/chat-prod:predict", header: answerGeminiKey, body: "{}"},
	{name: "gemini refused path", method: "POST", path: "/v1beta/models/chat-prod:generateContent/%2e%2e", header: answerGeminiKey, body: "{}"},
	{name: "gemini unknown model", method: "POST", path: "/v1beta/models/nope:generateContent", header: answerGeminiKey, body: answerGemini},
	{name: "gemini invalid json", method: "POST", path: "/v1beta/models/chat-prod:generateContent", header: answerGeminiKey, body: "{"},
	{name: "gemini embedding with a task type", method: "POST", path: "/v1beta/models/chat-prod:embedContent", header: answerGeminiKey,
		body: `{"content":{"parts":[{"text":"x"}]},"taskType":"CLUSTERING"}`},
	{name: "gemini model list", method: "GET", path: "/v1beta/models", header: answerGeminiKey},
	{name: "gemini model got", method: "GET", path: "/v1beta/models/chat-prod", header: answerGeminiKey},
	{name: "gemini unknown model got", method: "GET", path: "/v1beta/models/nope", header: answerGeminiKey},
	{name: "gemini model list without a key", method: "GET", path: "/v1beta/models"},
	{name: "gemini model list wrong method", method: "POST", path: "/v1beta/models", header: answerGeminiKey, body: "{}"},
	{name: "gemini token estimate", method: "POST", path: "/v1beta/models/chat-prod:countTokens", header: answerGeminiKey,
		body: `{"contents":[{"parts":[{"text":"hello there"}]}]}`},
	{name: "gemini stream broken mid-way", method: "POST", path: "/v1beta/models/sse-break:streamGenerateContent?alt=sse", header: answerGeminiKey,
		body: answerGemini},
	{name: "served", method: "POST", path: "/v1/chat/completions", header: answerKey, body: answerChat},
}

// answerGemini is a generateContent body; answerGeminiKey the key as
// Google's SDKs send it.
const answerGemini = `{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`

var answerGeminiKey = map[string]string{"X-Goog-Api-Key": answerKey["Authorization"][len("Bearer "):]}

// tenantAnswerCases run on a gateway with a KeyResolver and an Admission
// (answerTenants).
var tenantAnswerCases = []answerCase{
	{name: "tenant no key", method: "POST", path: "/v1/chat/completions", body: answerChat},
	{name: "tenant revoked", method: "POST", path: "/v1/chat/completions", body: answerChat, header: map[string]string{"Authorization": "Bearer revoked"}},
	{name: "tenant expired", method: "POST", path: "/v1/messages", body: answerMessages, header: map[string]string{"X-Api-Key": "expired"}},
	{name: "tenant store down", method: "POST", path: "/v1/chat/completions", body: answerChat, header: map[string]string{"Api-Key": "down"}},
	{name: "tenant rpm", method: "POST", path: "/v1/chat/completions", body: answerChat, header: map[string]string{"Api-Key": "rpm"}},
	{name: "tenant tpm", method: "POST", path: "/v1/chat/completions", body: `{"model":"alias","max_tokens":100,"messages":[]}`, header: map[string]string{"Api-Key": "tpm"}},
	{name: "tenant tpm object", method: "GET", path: "/v1/responses/" + signedFor("tpm", "resp_abc", "up"), header: map[string]string{"Api-Key": "tpm"}},
	{name: "tenant tpm pinned", method: "GET", path: "/v1/files", header: map[string]string{"Api-Key": "tpm"}},
	{name: "tenant tpm realtime", method: "GET", path: "/v1/realtime?model=alias", header: map[string]string{"Api-Key": "tpm", "Connection": "Upgrade", "Upgrade": "websocket"}},
	{name: "tenant budget anthropic", method: "POST", path: "/v1/messages", body: answerMessages, header: map[string]string{"Api-Key": "budget"}},
	{name: "tenant model", method: "POST", path: "/v1/chat/completions", body: answerChat, header: map[string]string{"Api-Key": "model"}},
	{name: "tenant concurrent", method: "POST", path: "/v1/chat/completions", body: answerChat, header: map[string]string{"Api-Key": "concurrent"}},
	{name: "tenant token estimate not admitted", method: "POST", path: "/v1/messages/count_tokens", body: answerChat, header: map[string]string{"Api-Key": "rpm"}},
	{name: "tenant rpm gemini", method: "POST", path: "/v1beta/models/alias:generateContent", body: answerGemini, header: map[string]string{"X-Goog-Api-Key": "rpm"}},
	{name: "tenant served", method: "POST", path: "/v1/chat/completions", body: answerChat, header: map[string]string{"Api-Key": "fine"}},
}

// TestErrorAnswers pins every error answer the handler writes, and its
// log line and counts, to testdata/answers.golden (go test -run
// TestErrorAnswers -update rewrites it): status, headers, body.
func TestErrorAnswers(t *testing.T) {
	var got strings.Builder
	run := func(g *answersGateway, cases []answerCase) {
		for _, c := range cases {
			fmt.Fprintf(&got, "== %s: %s %s\n%s\n", c.name, c.method, c.path, g.do(t, c))
		}
	}
	run(newAnswersGateway(t, false, false), []answerCase{{name: "not ready", method: "POST", path: "/v1/chat/completions", body: answerChat}})
	run(newAnswersGateway(t, false, true), keyAnswerCases)
	run(newAnswersGateway(t, true, true), tenantAnswerCases)
	halted := newAnswersGateway(t, false, true)
	halted.h.Halt()
	run(halted, []answerCase{{name: "shutting down", method: "POST", path: "/v1/chat/completions", header: answerKey, body: answerChat}})
	matchGolden(t, "testdata/answers.golden", got.String())
}

// matchGolden fails t at the first line where got differs from the file
// golden, which -update rewrites.
func matchGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("answers differ from %s at line %d:\n got: %s\nwant: %s", golden, i+1, g, w)
		}
	}
}

func TestStreamErrorEventIsOneEvent(t *testing.T) {
	ev := string(streamErrorEvent(translate.OpenAI, `quote " and newline`+"\n", "c"))
	if !strings.HasPrefix(ev, "data: {\"error\":") || !strings.HasSuffix(ev, "}\n\n") || strings.Count(ev, "\n") != 2 {
		t.Fatalf("event %q", ev)
	}
}
