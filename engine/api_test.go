package engine

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

func TestHeadersOnHealthyPrimary(t *testing.T) {
	upstreamAnswer := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "upstream-id-1")
		w.Header().Set("X-Ratelimit-Remaining-Tokens", "9000")
		answer("weu")(w, r)
	}
	h := start(t, []upstreamtest.Step{upstreamAnswer}, []upstreamtest.Step{answer("sec")}, "")
	resp, body := h.post("/v1/chat/completions", chat, "X-Request-Id", "caller-id-7")
	if resp.StatusCode != 200 || !strings.Contains(body, "hello from weu") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	want := map[string]string{
		"X-Switchover-Backend":           "aoai-westeurope",
		"X-Switchover-Region":            "westeurope",
		"X-Switchover-Failover":          "false",
		"X-Switchover-Attempts":          "1",
		"X-Request-Id":                   "caller-id-7",
		"X-Upstream-Request-Id":          "upstream-id-1",
		"X-Ratelimit-Remaining-Tokens":   "9000",
		"X-Ratelimit-Remaining-Requests": "59",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	// The upstream got the deployment in the path, its own key, and the
	// caller's request id; not the caller's key.
	if got := h.weu.Path(0); got != "/openai/deployments/gpt-4o-weu/chat/completions?api-version=2024-10-21" {
		t.Errorf("upstream path %q", got)
	}
	uh := h.weu.Header(0)
	if uh.Get("Api-Key") != weuSecret || uh.Get("Authorization") != "" || uh.Get("X-Request-Id") != "caller-id-7" {
		t.Errorf("upstream headers %v", uh)
	}
	// A request without an id gets a generated one.
	resp, _ = h.post("/v1/chat/completions", chat)
	if id := resp.Header.Get("X-Request-Id"); len(id) != 32 {
		t.Errorf("generated request id %q", id)
	}
}

// TestFailoverHeadersMetricsAndLog: a 429 with Retry-After on the primary
// is failed over within the call, the answer and the request log say so,
// the primary is benched at once (the next call goes straight to the
// second tier) and the metrics count each step. (The breaker's own log
// line and metrics are the gateway's: TestBreakerOpeningLoggedAndExported.)
func TestFailoverHeadersMetricsAndLog(t *testing.T) {
	h := start(t,
		[]upstreamtest.Step{status(429, "Retry-After", "12", "X-Ratelimit-Remaining-Requests", "0")},
		[]upstreamtest.Step{answer("sec")}, "")
	resp, body := h.post("/v1/chat/completions", chat)
	if resp.StatusCode != 200 || !strings.Contains(body, "hello from sec") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Switchover-Backend") != "aoai-swedencentral" || resp.Header.Get("X-Switchover-Failover") != "true" || resp.Header.Get("X-Switchover-Attempts") != "2" {
		t.Fatalf("headers %v", resp.Header)
	}
	// The openai backend got the member's model in the body.
	if got := h.sec.Body(0); !strings.Contains(got, `"model":"gpt-4o"`) || strings.Contains(got, "chat-prod") {
		t.Errorf("secondary body %s", got)
	}
	// The 429's Retry-After benched the primary at once: the second
	// request goes straight to tier 2, without a refused call.
	h.post("/v1/chat/completions", chat)
	if n := h.weu.Calls(); n != 1 {
		t.Errorf("the benched primary got %d calls, want 1", n)
	}

	m := h.metrics
	checks := []struct {
		name   string
		got    float64
		wanted float64
	}{
		{"failovers", metric(t, m, "switchover_failovers_total", "pool", "chat-prod", "from", "aoai-westeurope", "to", "aoai-swedencentral", "reason", "rate_limited"), 1},
		{"failovers while benched", metric(t, m, "switchover_failovers_total", "pool", "chat-prod", "from", "aoai-westeurope", "to", "aoai-swedencentral", "reason", "breaker_open"), 1},
		{"429 attempts", metric(t, m, "switchover_upstream_attempts_total", "pool", "chat-prod", "backend", "aoai-westeurope", "result", "429"), 1},
		{"2xx attempts", metric(t, m, "switchover_upstream_attempts_total", "pool", "chat-prod", "backend", "aoai-swedencentral", "result", "2xx"), 2},
		{"requests", metric(t, m, "switchover_requests_total", "pool", "chat-prod", "backend", "aoai-swedencentral", "code", "2xx"), 2},
		{"first byte histogram", metric(t, m, "switchover_request_first_byte_seconds", "pool", "chat-prod"), 2},
	}
	for _, c := range checks {
		if c.got != c.wanted {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.wanted)
		}
	}
	// One request log line a request, with its attempts.
	lines := requestLines(t, h.logs.String())
	if len(lines) != 2 {
		t.Fatalf("%d request log lines, want 2:\n%s", len(lines), h.logs.String())
	}
	l := lines[0]
	if l["backend"] != "aoai-swedencentral" || l["failover"] != true || l["attempts"] != 2.0 || l["key"] != "app-team" ||
		!strings.HasPrefix(l["tried"].(string), "aoai-westeurope=429 rate_limited ") || l["status"] != 200.0 {
		t.Errorf("request log line %v", l)
	}
	if l := lines[1]; l["failover"] != true || l["attempts"] != 1.0 || !strings.Contains(l["tried"].(string), "aoai-swedencentral=200") {
		t.Errorf("second request log line %v", l)
	}
}

func TestRequestErrors(t *testing.T) {
	h := start(t, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "")
	big := `{"model":"chat-prod","messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`
	tests := []struct {
		name, method, path, body string
		want                     int
		code                     string
	}{
		{"body too large", "POST", "/v1/chat/completions", big, 413, "request_too_large"},
		{"not JSON", "POST", "/v1/chat/completions", `model=chat-prod`, 400, "invalid_json"},
		{"no model", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "missing_model"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"gpt-5"}`, 404, "model_not_found"},
		{"unknown deployment", "POST", "/openai/deployments/nope/chat/completions?api-version=2024-10-21", `{}`, 404, "model_not_found"},
		{"unknown path", "POST", "/v1/no/such/route", `{}`, 404, "not_found"},
		{"wrong method", "DELETE", "/v1/chat/completions", ``, 405, "method_not_allowed"},
		{"list of stored chats", "GET", "/v1/chat/completions", ``, 404, "list_not_supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, h.url+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+appKey)
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct {
				Error struct{ Code, Message, Type string }
			}
			if resp.StatusCode != tc.want || json.Unmarshal(b, &e) != nil || e.Error.Code != tc.code || e.Error.Message == "" {
				t.Fatalf("got %d %s, want %d with code %s", resp.StatusCode, b, tc.want, tc.code)
			}
		})
	}
	if h.weu.Calls()+h.sec.Calls() != 0 {
		t.Fatal("a bad request reached a backend")
	}
}

func TestAPIShapes(t *testing.T) {
	h := start(t, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "")
	paths := []struct{ path, body string }{
		{"/v1/chat/completions", chat},
		{"/chat/completions", chat},
		{"/openai/v1/chat/completions", chat},
		{"/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21", `{"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat/completions", strings.Replace(chat, "chat-prod", "gpt-4o", 1)}, // alias
	}
	for i, p := range paths {
		resp, body := h.post(p.path, p.body)
		if resp.StatusCode != 200 || resp.Header.Get("X-Switchover-Backend") != "aoai-westeurope" {
			t.Fatalf("%s: %d %s", p.path, resp.StatusCode, body)
		}
		if got := h.weu.Path(i); got != "/openai/deployments/gpt-4o-weu/chat/completions?api-version=2024-10-21" {
			t.Fatalf("%s went upstream as %s", p.path, got)
		}
	}
	// Embeddings and completions keep their operation.
	for _, op := range []string{"embeddings", "completions"} {
		resp, _ := h.post("/v1/"+op, `{"model":"chat-prod","input":"x"}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", op, resp.StatusCode)
		}
	}
	if got := h.weu.Path(len(paths) + 1); got != "/openai/deployments/gpt-4o-weu/completions?api-version=2024-10-21" {
		t.Fatalf("completions upstream path %s", got)
	}

	_, body := h.get("/v1/models")
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "chat-prod" {
		t.Fatalf("models %s", body)
	}
	if resp, _ := h.get("/v1/models/gpt-4o"); resp.StatusCode != 200 {
		t.Fatalf("alias model lookup %d", resp.StatusCode)
	}
	if resp, _ := h.get("/healthz"); resp.StatusCode != 200 {
		t.Fatal("healthz")
	}
	if resp, _ := h.get("/readyz"); resp.StatusCode != 200 {
		t.Fatal("readyz")
	}
}

func TestTraceHeader(t *testing.T) {
	h := start(t, []upstreamtest.Step{status(503)}, []upstreamtest.Step{answer("sec")}, "")
	resp, _ := h.post("/v1/chat/completions", chat)
	if resp.Header.Get("X-Switchover-Trace") != "" {
		t.Fatal("trace header sent without being asked for")
	}
	resp, _ = h.post("/v1/chat/completions", chat, "X-Switchover-Trace", "1")
	got := resp.Header.Get("X-Switchover-Trace")
	if !strings.HasPrefix(got, "aoai-westeurope;status=503;reason=server_error;ms=") || !strings.Contains(got, ", aoai-swedencentral;status=200;ms=") {
		t.Fatalf("trace header %q", got)
	}
}

// A request past server.max_concurrent_requests gets 503 at once and is
// counted in switchover_requests_refused_total by its code.
func TestMaxConcurrentRequestsRefusedAndCounted(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	held := func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		answer("weu")(w, r)
	}
	h := start(t, []upstreamtest.Step{held}, nil, "", func(y string) string {
		return strings.Replace(y, "server: {", "server: {max_concurrent_requests: 1, ", 1)
	})
	done := make(chan int, 1)
	go func() {
		resp, _ := h.post("/v1/chat/completions", chat)
		done <- resp.StatusCode
	}()
	<-arrived
	resp, body := h.post("/v1/chat/completions", chat)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
		!strings.Contains(body, `"code":"too_many_concurrent_requests"`) {
		t.Fatalf("past the limit: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, _ := h.get("/healthz"); resp.StatusCode != 200 {
		t.Fatalf("/healthz at the limit: %d", resp.StatusCode)
	}
	if got := metric(t, h.metrics, "switchover_requests_refused_total", "code", "too_many_concurrent_requests"); got != 1 {
		t.Fatalf("switchover_requests_refused_total = %v, want 1", got)
	}
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("the request in flight got %d", code)
	}
}

// server.max_concurrent_requests_per_key reaches the handler: a key's
// request past its share of the slots gets 429 at once, while the server
// has slots left.
func TestMaxConcurrentRequestsPerKeyRefusesAKeyPastItsShare(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	held := func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		answer("weu")(w, r)
	}
	h := start(t, []upstreamtest.Step{held}, nil, "", func(y string) string {
		return strings.Replace(y, "server: {", "server: {max_concurrent_requests: 4, max_concurrent_requests_per_key: 1, ", 1)
	})
	done := make(chan int, 1)
	go func() {
		resp, _ := h.post("/v1/chat/completions", chat)
		done <- resp.StatusCode
	}()
	<-arrived
	resp, body := h.post("/v1/chat/completions", chat)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, `"code":"rate_limit_exceeded"`) ||
		!strings.Contains(body, "max_concurrent_requests_per_key") {
		t.Fatalf("the key past its share: %d: %s", resp.StatusCode, body)
	}
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("the request in flight got %d", code)
	}
}
