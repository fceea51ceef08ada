package proxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

func TestGeminiPath(t *testing.T) {
	for _, c := range []struct {
		path, model, method string
		ok                  bool
	}{
		{"/v1beta/models/chat-prod:generateContent", "chat-prod", "generateContent", true},
		{"/v1beta/models/chat-prod:streamGenerateContent", "chat-prod", "streamGenerateContent", true},
		{"/v1/models/gemini-2.5-flash:countTokens", "gemini-2.5-flash", "countTokens", true},
		{"/v1beta/models/x:predict", "x", "predict", true}, // answered 404 in Google's format
		{"/v1beta/models/chat-prod", "", "", false},
		{"/v1beta/tunedModels/t:generateContent", "", "", false},
		{"/v1beta/models/:generateContent", "", "", false},
		{"/v1/chat/completions", "", "", false},
		// Regression: OpenAI's model retrieval of a fine-tuned model, whose
		// id holds colons, is not Gemini's API.
		{"/v1/models/ft:gpt-4o-mini-2024-07-18:org::abc123", "", "", false},
	} {
		model, method, ok := geminiPath(c.path)
		if model != c.model || method != c.method || ok != c.ok {
			t.Errorf("%s: got %q %q %v", c.path, model, method, ok)
		}
	}
}

func TestGeminiModelsPath(t *testing.T) {
	for _, c := range []struct {
		path, id string
		ok       bool
	}{
		{"/v1beta/models", "", true},
		{"/v1beta/models/", "", true},
		{"/v1beta/models/chat-prod", "chat-prod", true},
		{"/v1beta/models/chat-prod:generateContent", "", false},
		{"/v1beta/modelsx", "", false},
		{"/v1beta/tunedModels", "", false},
		// /v1/models is OpenAI's model list.
		{"/v1/models", "", false},
		{"/v1/models/chat-prod", "", false},
	} {
		id, ok := geminiModelsPath(c.path)
		if id != c.id || ok != c.ok {
			t.Errorf("%s: got %q %v", c.path, id, ok)
		}
		if IsGeminiPath(c.path) != (c.ok || strings.Contains(c.path, ":")) {
			t.Errorf("%s: IsGeminiPath %v", c.path, !c.ok)
		}
	}
}

// TestQueryKeyTakenOut: ?key= is moved into X-Goog-Api-Key and out of
// the URL, the rest of the query kept; a key in the header wins.
func TestQueryKeyTakenOut(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1beta/models/m:streamGenerateContent?alt=sse&key=secret-1", nil)
	if k, ok := presentedKey(r); !ok || k != "secret-1" {
		t.Fatalf("presented %q %v", k, ok)
	}
	stripQueryKey(r)
	if r.URL.RawQuery != "alt=sse" || r.Header.Get("X-Goog-Api-Key") != "secret-1" || strings.Contains(r.URL.String(), "secret") {
		t.Errorf("query %q header %q", r.URL.RawQuery, r.Header.Get("X-Goog-Api-Key"))
	}
	r = httptest.NewRequest("POST", "/v1beta/models/m:generateContent?key=from-query", nil)
	r.Header.Set("X-Goog-Api-Key", "from-header")
	stripQueryKey(r)
	if r.URL.RawQuery != "" || r.Header.Get("X-Goog-Api-Key") != "from-header" {
		t.Errorf("query %q header %q", r.URL.RawQuery, r.Header.Get("X-Goog-Api-Key"))
	}
	// Off Gemini's paths the query's key is no key.
	r = httptest.NewRequest("POST", "/v1/chat/completions?key=secret-1", nil)
	if _, ok := presentedKey(r); ok {
		t.Error("a query key taken on an OpenAI path")
	}
}

func TestJSONArrayStream(t *testing.T) {
	src := "data: {\"a\":1}\n\ndata: {\"b\":2}\r\n\r\n: comment\n\ndata: {\"c\":3}\n\n"
	for _, r := range []io.Reader{strings.NewReader(src), iotest.OneByteReader(strings.NewReader(src))} {
		got, err := io.ReadAll(newJSONArrayStream(io.NopCloser(r)))
		if err != nil || string(got) != "[{\"a\":1},\r\n{\"b\":2},\r\n{\"c\":3}]" {
			t.Errorf("got %q, %v", got, err)
		}
	}
	got, _ := io.ReadAll(newJSONArrayStream(io.NopCloser(strings.NewReader(""))))
	if string(got) != "[]" {
		t.Errorf("empty: %q", got)
	}
	// A broken source leaves the array open: the client sees it broken.
	broken := io.MultiReader(strings.NewReader("data: {\"a\":1}\n\n"), iotest.ErrReader(errors.New("cut")))
	got, err := io.ReadAll(newJSONArrayStream(io.NopCloser(broken)))
	if err == nil || string(got) != "[{\"a\":1}" {
		t.Errorf("broken: %q, %v", got, err)
	}
}

// TestGeminiErrorRetryInfo: a 429 with Retry-After gets its RetryInfo;
// other statuses and a 429 without Retry-After do not.
func TestGeminiErrorRetryInfo(t *testing.T) {
	h := http.Header{"Retry-After": {"7"}}
	if got := string(GeminiError(429, "rate_limited", "slow", h)); !strings.Contains(got, `"retryDelay":"7s"`) || !strings.Contains(got, `"status":"RESOURCE_EXHAUSTED"`) {
		t.Errorf("429: %s", got)
	}
	if got := string(GeminiError(403, "cross_origin_refused", "no", h)); strings.Contains(got, "RetryInfo") || !strings.Contains(got, `"status":"PERMISSION_DENIED"`) {
		t.Errorf("403: %s", got)
	}
	if got := string(GeminiError(429, "x", "slow", http.Header{})); strings.Contains(got, "RetryInfo") {
		t.Errorf("429 without Retry-After: %s", got)
	}
}
