package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// withAnthropic adds an anthropic backend at url (key ${TEST_SEC_KEY})
// and a pool claude-prod of it alone.
func withAnthropic(url string) func(string) string {
	return func(y string) string {
		return strings.Replace(y, "pools:\n", `  - name: claude
    type: anthropic
    url: `+url+`
    api_key: ${TEST_SEC_KEY}
pools:
  - name: claude-prod
    members:
      - {backend: claude, model: claude-pinned}
`, 1)
	}
}

// TestDuplicateModelKeyRejected: a body whose second "model" (however
// spelled) would override the pool's pinned model upstream is refused
// with 400 in the caller's format, and no backend is called.
func TestDuplicateModelKeyRejected(t *testing.T) {
	claude := upstreamtest.New(t, answer("claude"))
	h := start(t, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "", withAnthropic(claude.URL))
	tests := []struct {
		name, path, body, wantType string
	}{
		{"second model", "/v1/chat/completions", `{"model":"chat-prod","stream":false,"model":"o1-pro","messages":[]}`, "invalid_request_error"},
		{"escaped second model", "/v1/chat/completions", `{"model":"chat-prod","mod\u0065l":"o1-pro","messages":[]}`, "invalid_request_error"},
		{"model in capitals", "/v1/chat/completions", `{"model":"chat-prod","MODEL":"o1-pro","messages":[]}`, "invalid_request_error"},
		{"second stream", "/v1/chat/completions", `{"model":"chat-prod","stream":false,"stream":true,"messages":[]}`, "invalid_request_error"},
		{"anthropic second model", "/v1/messages", `{"model":"claude-prod","max_tokens":5,"messages":[],"model":"claude-opus"}`, "invalid_request_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.post(tc.path, tc.body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type string `json:"type"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Type != tc.wantType {
				t.Fatalf("error body %s", body)
			}
			if strings.HasPrefix(tc.path, "/v1/messages") && e.Type != "error" {
				t.Fatalf("not an Anthropic error: %s", body)
			}
		})
	}
	if n := h.weu.Calls() + h.sec.Calls() + claude.Calls(); n != 0 {
		t.Fatalf("%d upstream calls for rejected bodies", n)
	}
}

// withAccount sets the openai backend's organization and project.
func withAccount(y string) string {
	return strings.Replace(y, "    region: swedencentral\n", "    region: swedencentral\n    organization: org-operator\n    project: proj-operator\n", 1)
}

// TestCallerHeadersNotForwarded: the caller's cookies, addresses, account
// headers, SDK telemetry and any number of headers of its own reach no
// upstream; the operator's organization and project do, and the request
// id and trace context still go through.
func TestCallerHeadersNotForwarded(t *testing.T) {
	h := start(t, []upstreamtest.Step{status(503)}, []upstreamtest.Step{answer("sec")}, "", withAccount)
	req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(chat))
	req.Header.Set("Authorization", "Bearer "+appKey)
	req.Header.Set("Content-Type", "application/json; charset=evil")
	req.Header.Set("X-Request-Id", "caller-id-9")
	sent := map[string]string{
		"Cookie":              "session=caller",
		"X-Forwarded-For":     "203.0.113.7",
		"Forwarded":           "for=203.0.113.7",
		"Openai-Organization": "org-caller",
		"Openai-Project":      "proj-caller",
		"Openai-Beta":         "assistants=v2",
		"Api-Key":             "caller-azure-key",
		"X-Api-Key":           "caller-anthropic-key",
		"X-Stainless-Os":      "Linux",
		"User-Agent":          "caller-agent/1.0",
		"Idempotency-Key":     "caller-idem",
		"Anthropic-Beta":      "caller-beta",
		"Baggage":             "user=alice",
	}
	for k, v := range sent {
		req.Header.Set(k, v)
	}
	for i := range 10000 {
		req.Header.Set(fmt.Sprintf("X-Junk-%05d", i), "x")
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "hello from sec") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for name, u := range map[string]*upstreamtest.Upstream{"azure": h.weu, "openai": h.sec} {
		uh := u.Header(0)
		for k, v := range sent {
			if got := uh.Values(k); len(got) > 0 && slices.Contains(got, v) {
				t.Errorf("%s upstream received the caller's %s: %q", name, k, got)
			}
		}
		for k := range uh {
			if strings.HasPrefix(k, "X-Junk-") {
				t.Fatalf("%s upstream received the caller's %s (and %d headers in all)", name, k, len(uh))
			}
		}
		if len(uh) > 12 {
			t.Errorf("%s upstream received %d headers: %v", name, len(uh), uh)
		}
		if uh.Get("X-Request-Id") != "caller-id-9" || uh.Get("Content-Type") != "application/json" {
			t.Errorf("%s upstream headers %v", name, uh)
		}
	}
	if uh := h.weu.Header(0); uh.Get("Openai-Organization") != "" || uh.Get("Api-Key") != weuSecret {
		t.Errorf("azure upstream headers %v", uh)
	}
	if uh := h.sec.Header(0); uh.Get("Openai-Organization") != "org-operator" || uh.Get("Openai-Project") != "proj-operator" ||
		uh.Get("Authorization") != "Bearer "+secSecret {
		t.Errorf("openai upstream headers %v", uh)
	}
}

// TestUpstreamResponseHeadersFiltered: an upstream's Set-Cookie and the
// headers that name the operator's account never reach the caller, on an
// answer, on an error passed through, or when every attempt failed; rate
// limits, request ids and processing times do.
func TestUpstreamResponseHeadersFiltered(t *testing.T) {
	leaky := func(code int) upstreamtest.Step {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Set-Cookie", "__cf_bm=operator-session; Path=/")
			w.Header().Set("Openai-Organization", "org-operator")
			w.Header().Set("Openai-Project", "proj-operator")
			w.Header().Set("Location", "http://10.0.0.7/internal")
			w.Header().Set("X-Request-Id", "upstream-id-3")
			w.Header().Set("Openai-Processing-Ms", "321")
			w.Header().Set("X-Ratelimit-Limit-Tokens", "30000")
			if code == 200 {
				answer("sec")(w, r)
				return
			}
			status(code)(w, r)
		}
	}
	tests := []struct {
		name       string
		weu, sec   upstreamtest.Step
		wantStatus int
		wantKept   []string
	}{
		{"answer", status(503), leaky(200), 200, []string{"X-Request-Id", "Openai-Processing-Ms", "X-Ratelimit-Limit-Tokens", "X-Upstream-Request-Id"}},
		{"error passed through", leaky(400), answer("sec"), 400, []string{"Openai-Processing-Ms", "X-Ratelimit-Limit-Tokens", "X-Upstream-Request-Id"}},
		{"every attempt failed", leaky(503), leaky(503), 503, []string{"X-Ratelimit-Limit-Tokens"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, []upstreamtest.Step{tc.weu}, []upstreamtest.Step{tc.sec}, "")
			resp, body := h.post("/v1/chat/completions", chat)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			for _, k := range []string{"Set-Cookie", "Openai-Organization", "Openai-Project", "Location"} {
				if v := resp.Header.Values(k); len(v) > 0 {
					t.Errorf("the client received %s: %q", k, v)
				}
			}
			for _, k := range tc.wantKept {
				if resp.Header.Get(k) == "" {
					t.Errorf("the client did not receive %s: %v", k, resp.Header)
				}
			}
		})
	}
}

// TestAnthropicBetaReachesAnthropicBackend: anthropic-beta is the one
// caller header an Anthropic backend gets, after the backend's own betas;
// the caller's anthropic-version and keys are replaced by the backend's.
func TestAnthropicBetaReachesAnthropicBackend(t *testing.T) {
	claude := upstreamtest.New(t, answer("claude"))
	withBeta := func(y string) string {
		return strings.Replace(y, "    type: anthropic\n", "    type: anthropic\n    headers: {anthropic-beta: operator-beta}\n", 1)
	}
	h := start(t, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "", withAnthropic(claude.URL), withBeta)
	resp, body := h.post("/v1/messages", `{"model":"claude-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		"Anthropic-Beta", "prompt-caching-2024-07-31", "Anthropic-Version", "1999-01-01", "X-Api-Key", "caller-key")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	uh := claude.Header(0)
	if got := uh.Values("Anthropic-Beta"); !slices.Equal(got, []string{"operator-beta", "prompt-caching-2024-07-31"}) {
		t.Errorf("anthropic-beta upstream %q", got)
	}
	if uh.Get("Anthropic-Version") != "2023-06-01" || uh.Get("X-Api-Key") != secSecret {
		t.Errorf("upstream headers %v", uh)
	}
	// Not to an OpenAI-format backend.
	h.post("/v1/chat/completions", chat, "Anthropic-Beta", "prompt-caching-2024-07-31")
	if got := h.weu.Header(0).Get("Anthropic-Beta"); got != "" {
		t.Errorf("azure upstream received anthropic-beta %q", got)
	}
}

// echoCredentialInStream starts a stream, then ends it with an error event
// quoting the credential the upstream received, split across two writes.
func echoCredentialInStream(w http.ResponseWriter, r *http.Request) {
	cred := r.Header.Get("Authorization") + r.Header.Get("Api-Key")
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
	w.(http.Flusher).Flush()
	msg, _ := json.Marshal("upstream rejected credential " + cred)
	ev := fmt.Sprintf("data: {\"error\":{\"message\":%s,\"type\":\"server_error\"}}\n\n", msg)
	half := len(ev) / 2
	io.WriteString(w, ev[:half])
	w.(http.Flusher).Flush()
	io.WriteString(w, ev[half:])
}

// TestStreamErrorEventsAreRedacted is the regression test for a backend
// credential quoted in an error event inside a passed-through stream:
// it never reaches the client, even split across reads.
func TestStreamErrorEventsAreRedacted(t *testing.T) {
	h := start(t, []upstreamtest.Step{echoCredentialInStream}, []upstreamtest.Step{answer("sec")}, "")
	resp, body := h.post("/v1/chat/completions", `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "\"content\":\"hi\"") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if !strings.Contains(body, "upstream rejected credential") || !strings.Contains(body, "[redacted]") {
		t.Fatalf("the error event was not relayed, redacted: %s", body)
	}
	for _, secret := range []string{weuSecret, secSecret} {
		if strings.Contains(body, secret) || strings.Contains(h.logs.String(), secret) {
			t.Fatalf("%q reached the client or the log:\n%s", secret, body)
		}
	}
}
