package gateway_test

import (
	"encoding/json"
	"net/http"
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
