package engine

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestGroqPresetThroughTheEngine: a backend named by the groq preset (its
// url set to a scripted upstream) is called on the preset's path with its
// Bearer key; an embeddings call, which Groq does not serve, is skipped as
// unsupported without a call; and Groq's rate-limit headers (a reset of
// 2m59.56s) keep the next call from a spent backend.
func TestGroqPresetThroughTheEngine(t *testing.T) {
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/openai/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer gsk-test-0123456789" ||
			r.Header.Get("Api-Key") != "" || !strings.Contains(string(body), `"model":"llama-3.3-70b-versatile"`) {
			http.Error(w, r.URL.Path+" "+string(body), http.StatusTeapot)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Ratelimit-Limit-Requests", "14400")
		h.Set("X-Ratelimit-Remaining-Requests", "0")
		h.Set("X-Ratelimit-Reset-Requests", "2m59.56s")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"llama-3.3-70b-versatile","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(up.Close)
	sv := serveConfig(t, fmt.Sprintf(`backends:
  - {name: groq, preset: groq, url: %q, api_key: gsk-test-0123456789}
pools:
  - name: fast
    aliases: [emb]
    members: [{backend: groq, model: llama-3.3-70b-versatile}]
`, up.URL+"/openai/v1"), nil)
	req, _ := http.NewRequest(http.MethodPost, sv.url+"/v1/embeddings", strings.NewReader(`{"model":"emb","input":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "skipped groq: groq cannot honour embeddings") {
		t.Fatalf("embeddings: %d %s", resp.StatusCode, body)
	}
	t.Logf("embeddings answered %d %s", resp.StatusCode, body)
	if status, h, body := sv.post(t, "fast", ""); status != http.StatusOK || h.Get("X-Switchover-Backend") != "groq" {
		t.Fatalf("chat: %d %s", status, body)
	}
	status, _, body2 := sv.post(t, "fast", "")
	if status != http.StatusTooManyRequests {
		t.Fatalf("chat after the quota was spent: %d %s", status, body2)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("upstream called %d times, want 1", n)
	}
	if strings.Contains(sv.logs.String(), "gsk-test-0123456789") {
		t.Error("the backend key is in the log")
	}
}
