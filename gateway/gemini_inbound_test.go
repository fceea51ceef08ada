package gateway_test

// Gemini's own API inbound (issue 25 §4), what the gateway owns of it: who
// a caller of Google's Go SDK (google.golang.org/genai) is, by the key in
// x-goog-api-key or ?key=, and the cross-site refusal, in Google's error
// shape. Translation and failover are the engine's
// (engine/gemini_inbound_test.go).

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/switchover-gw/switchover/internal/geminitest"
)

// TestGeminiSDKKeysAndErrors: the gateway key as x-goog-api-key (the
// SDK's) or ?key= (never logged); without one 401 UNAUTHENTICATED; a pool
// the key may not use refused; an unknown model 404 NOT_FOUND; all in
// Google's error shape as the SDK reads it.
func TestGeminiSDKKeysAndErrors(t *testing.T) {
	const otherKey = "other-key-0123456789abcdef0123456789"
	e := startProvidersWith(t, []string{"gemini"}, nil, "keys:\n  - {name: app, key: "+tenantKey+"}\n  - {name: other, key: "+otherKey+", pools: [elsewhere]}\n",
		func(y string) string {
			return strings.Replace(y, "pools:\n", "pools:\n  - name: elsewhere\n    members: [{backend: aoai-weu}]\n", 1)
		})
	ctx := t.Context()
	resp, err := geminitest.Client(t, e.url, tenantKey).Models.GenerateContent(ctx, "chat-prod", genai.Text("hi"), nil)
	if err != nil || resp.Text() == "" {
		t.Fatalf("with the key: %v", err)
	}

	apiErr := func(err error) genai.APIError {
		t.Helper()
		var ae genai.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("not an APIError: %v", err)
		}
		return ae
	}
	_, err = geminitest.Client(t, e.url, "").Models.GenerateContent(ctx, "chat-prod", genai.Text("hi"), nil)
	if ae := apiErr(err); ae.Code != 401 || ae.Status != "UNAUTHENTICATED" {
		t.Errorf("no key: %+v", ae)
	}
	_, err = geminitest.Client(t, e.url, "wrong-key-0123456789abcdef0123").Models.GenerateContent(ctx, "chat-prod", genai.Text("hi"), nil)
	if ae := apiErr(err); ae.Code != 401 || ae.Status != "UNAUTHENTICATED" {
		t.Errorf("a wrong key: %+v", ae)
	}
	_, err = geminitest.Client(t, e.url, otherKey).Models.GenerateContent(ctx, "chat-prod", genai.Text("hi"), nil)
	if ae := apiErr(err); ae.Code != 403 && ae.Code != 404 || ae.Status != "PERMISSION_DENIED" && ae.Status != "NOT_FOUND" {
		t.Errorf("another key's pool: %+v", ae)
	}
	_, err = geminitest.Client(t, e.url, tenantKey).Models.GenerateContent(ctx, "no-such-pool", genai.Text("hi"), nil)
	if ae := apiErr(err); ae.Code != 404 || ae.Status != "NOT_FOUND" || !strings.Contains(ae.Message, "no-such-pool") {
		t.Errorf("unknown model: %+v", ae)
	}
	_, err = geminitest.Client(t, e.url, tenantKey).Models.GenerateContent(ctx, "chat-prod", nil, nil)
	if err == nil {
		t.Error("no contents: no error")
	}

	// The key in the query: served, and neither logged nor relayed.
	status, body := geminitest.Post(t, e.url+"/v1beta/models/chat-prod:generateContent?key="+tenantKey, "", `{"contents":[{"parts":[{"text":"hi"}]}]}`)
	if status != 200 {
		t.Fatalf("?key=: %d %s", status, body)
	}
	status, body = geminitest.Post(t, e.url+"/v1beta/models/chat-prod:generateContent?key=nope-0123456789abcdef0123", "", `{"contents":[{"parts":[{"text":"hi"}]}]}`)
	if status != 401 || geminitest.Status(t, body) != "UNAUTHENTICATED" {
		t.Errorf("a wrong ?key=: %d %s", status, body)
	}
	// A method the gateway does not serve.
	status, body = geminitest.Post(t, e.url+"/v1beta/models/chat-prod:predictLongRunning", tenantKey, `{}`)
	if status != 404 || geminitest.Status(t, body) != "NOT_FOUND" {
		t.Errorf("unknown method: %d %s", status, body)
	}
	if logs := e.logs.String(); strings.Contains(logs, tenantKey) || strings.Contains(logs, "nope-0123456789") {
		t.Error("a gateway key from the query is in the log")
	}
}

// TestGeminiCrossSiteRefused: in no-key mode a cross-site browser request
// to Gemini's API is refused like the other API routes, in Google's shape.
func TestGeminiCrossSiteRefused(t *testing.T) {
	e := startProviders(t, []string{"gemini"}, nil, "")
	req, _ := http.NewRequest(http.MethodPost, e.url+"/v1beta/models/chat-prod:generateContent", strings.NewReader(`{"contents":[{"parts":[{"text":"hi"}]}]}`))
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || geminitest.Status(t, body) != "PERMISSION_DENIED" {
		t.Errorf("got %d %s", resp.StatusCode, body)
	}
}
