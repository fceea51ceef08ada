package engine

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/route"
)

// TestMessagesWithoutMaxTokensRefusedBeforeRouting: /v1/messages without
// max_tokens was 200 when a translated member answered and 400 when an
// Anthropic one did. The gateway refuses it itself, whichever member
// would serve it, with Anthropic's error body and message; no member is
// called.
func TestMessagesWithoutMaxTokensRefusedBeforeRouting(t *testing.T) {
	for _, member := range []string{"claude", "openai", "gemini"} {
		t.Run(member, func(t *testing.T) {
			e := startProviders(t, []string{member}, nil, "")
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/v1/messages",
				strings.NewReader(`{"model":"chat-prod","messages":[{"role":"user","content":"hello"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusBadRequest || body.Type != "error" || body.Error.Type != "invalid_request_error" ||
				body.Error.Message != "max_tokens: Field required" {
				t.Fatalf("%d %+v, want 400 invalid_request_error \"max_tokens: Field required\"", resp.StatusCode, body)
			}
			if b := resp.Header.Get(route.HeaderBackend); b != "" {
				t.Errorf("answered by backend %q; the gateway should refuse it before routing", b)
			}

			// With max_tokens, the same call is served.
			status, answer := e.postRaw(t, "/v1/messages", `{"model":"chat-prod","max_tokens":16,"messages":[{"role":"user","content":"hello"}]}`)
			if status != http.StatusOK {
				t.Fatalf("with max_tokens: %d %s", status, answer)
			}
		})
	}
}
