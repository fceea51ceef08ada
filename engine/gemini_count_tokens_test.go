package engine

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// TestGeminiCountTokensForwardedToGeminiMember: a Gemini client's
// countTokens reaches the Gemini member's own :countTokens (its key, the
// client's body), and its count is the answer, not the gateway's
// estimate; a pool with no Gemini member still answers with the
// estimate, marked as one, and calls nobody.
func TestGeminiCountTokensForwardedToGeminiMember(t *testing.T) {
	const body = `{"contents":[{"role":"user","parts":[{"text":"How many tokens is this sentence?"}]}]}`
	var calls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1beta/models/gemini-2.5-flash:countTokens" ||
			r.Header.Get("X-Goog-Api-Key") != "goog-key-000000000" || string(b) != body {
			t.Errorf("upstream got %s %s key %q body %s", r.Method, r.URL.Path, r.Header.Get("X-Goog-Api-Key"), b)
			http.Error(w, "unexpected", http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"totalTokens":4242}`)
	}))
	t.Cleanup(up.Close)
	for _, tt := range []struct {
		name, backend string
		want          string
		calls         int32
		estimate      bool
	}{
		{"gemini member counts", fmt.Sprintf("{name: gem, type: gemini, url: %q, api_key: goog-key-000000000}", up.URL), `{"totalTokens":4242}`, 1, false},
		{"no gemini member: estimated", fmt.Sprintf("{name: oai, type: openai, url: %q, api_key: sk-openai-00000000}", up.URL), "", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls.Store(0)
			name := strings.SplitN(strings.TrimPrefix(tt.backend, "{name: "), ",", 2)[0]
			s := serveConfig(t, fmt.Sprintf(`server: {drain_delay: 0s}
backends:
  - %s
pools:
  - name: chat-prod
    members:
      - {backend: %s, model: gemini-2.5-flash}
`, tt.backend, name), nil)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/v1beta/models/chat-prod:countTokens", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if got := calls.Load(); got != tt.calls {
				t.Fatalf("%d upstream calls, want %d", got, tt.calls)
			}
			if got := resp.Header.Get(proxy.HeaderEstimate) == "true"; got != tt.estimate {
				t.Fatalf("estimate header %q, want estimate=%v", resp.Header.Get(proxy.HeaderEstimate), tt.estimate)
			}
			if tt.want != "" && strings.TrimSpace(string(b)) != tt.want {
				t.Fatalf("answer %s, want %s", b, tt.want)
			}
			if !tt.estimate && resp.Header.Get(route.HeaderBackend) != "gem" {
				t.Fatalf("counted by %q", resp.Header.Get(route.HeaderBackend))
			}
		})
	}
}
