package gateway_test

// Gemini's model list (issue 25 §4): Google's Go SDK lists and gets the
// gateway's pools through /v1beta/models, with the key rules of OpenAI's
// model list.

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/switchover-gw/switchover/internal/geminitest"
)

// geminiModelsEnv is a gateway whose pools are chat-prod (alias
// claude-sonnet-4-5; a Gemini member) and elsewhere (an Azure member:
// OpenAI's format, so the embedding methods), with the key tenantKey for
// every pool and otherKey limited to elsewhere.
func geminiModelsEnv(t *testing.T) *providerEnv {
	t.Helper()
	return startProvidersWith(t, []string{"gemini"}, nil,
		"keys:\n  - {name: app, key: "+tenantKey+"}\n  - {name: other, key: "+geminiOtherKey+", pools: [elsewhere]}\n",
		func(y string) string {
			return strings.Replace(y, "pools:\n", "pools:\n  - name: elsewhere\n    members: [{backend: aoai-weu}]\n", 1)
		})
}

const geminiOtherKey = "other-key-0123456789abcdef0123456789"

// sdkAPIError is err as the SDK's APIError.
func sdkAPIError(t *testing.T, err error) genai.APIError {
	t.Helper()
	var ae genai.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("not an APIError: %v", err)
	}
	return ae
}

// TestGeminiSDKListsModels: Models.All and Models.List (paged) list one
// model per pool, "models/<pool>", with the methods the gateway serves on
// it (the embedding ones only where an OpenAI-format member takes them)
// and no token limits it does not know; Models.Get finds a pool by name,
// "models/<name>" or alias.
func TestGeminiSDKListsModels(t *testing.T) {
	e := geminiModelsEnv(t)
	c := geminitest.Client(t, e.url, tenantKey)
	ctx := t.Context()
	got := map[string]*genai.Model{}
	for m, err := range c.Models.All(ctx) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		got[m.Name] = m
	}
	if len(got) != 2 || got["models/chat-prod"] == nil || got["models/elsewhere"] == nil {
		t.Fatalf("listed %v", slices.Collect(func(yield func(string) bool) {
			for k := range got {
				yield(k)
			}
		}))
	}
	chat := []string{"generateContent", "streamGenerateContent", "countTokens"}
	if m := got["models/chat-prod"]; !slices.Equal(m.SupportedActions, chat) || m.DisplayName != "chat-prod" || m.InputTokenLimit != 0 || m.OutputTokenLimit != 0 {
		t.Errorf("chat-prod: %+v", m)
	}
	if m := got["models/elsewhere"]; !slices.Equal(m.SupportedActions, append(chat, "embedContent", "batchEmbedContents")) {
		t.Errorf("elsewhere: %+v", m)
	}

	page, err := c.Models.List(ctx, &genai.ListModelsConfig{PageSize: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].Name != "models/chat-prod" || page.NextPageToken == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	page, err = page.Next(ctx)
	if err != nil || len(page.Items) != 1 || page.Items[0].Name != "models/elsewhere" {
		t.Fatalf("second page: %+v %v", page, err)
	}
	if _, err := page.Next(ctx); !errors.Is(err, genai.ErrPageDone) {
		t.Errorf("after the last page: %v", err)
	}

	for _, name := range []string{"chat-prod", "models/chat-prod", "claude-sonnet-4-5"} {
		m, err := c.Models.Get(ctx, name, nil)
		if err != nil || m.Name != "models/chat-prod" || !slices.Equal(m.SupportedActions, chat) {
			t.Errorf("Get %s: %+v %v", name, m, err)
		}
	}
	_, err = c.Models.Get(ctx, "no-such-pool", nil)
	if ae := sdkAPIError(t, err); ae.Code != 404 || ae.Status != "NOT_FOUND" || !strings.Contains(ae.Message, "no-such-pool") {
		t.Errorf("unknown model: %+v", ae)
	}
}

// TestGeminiModelsKeys: a key limited to some pools lists and gets only
// those (another's is NOT_FOUND, as one that does not exist); without a
// key or with a wrong one 401 UNAUTHENTICATED; the key in ?key= works
// and is not logged; another method than GET is 405; all in Google's
// error shape.
func TestGeminiModelsKeys(t *testing.T) {
	e := geminiModelsEnv(t)
	ctx := t.Context()
	other := geminitest.Client(t, e.url, geminiOtherKey)
	var names []string
	for m, err := range other.Models.All(ctx) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		names = append(names, m.Name)
	}
	if !slices.Equal(names, []string{"models/elsewhere"}) {
		t.Errorf("the limited key lists %v", names)
	}
	if m, err := other.Models.Get(ctx, "elsewhere", nil); err != nil || m.Name != "models/elsewhere" {
		t.Errorf("its own pool: %+v %v", m, err)
	}
	for _, name := range []string{"chat-prod", "claude-sonnet-4-5"} {
		_, err := other.Models.Get(ctx, name, nil)
		if ae := sdkAPIError(t, err); ae.Code != 404 || ae.Status != "NOT_FOUND" {
			t.Errorf("another key's pool %s: %+v", name, ae)
		}
	}

	for _, key := range []string{"", "wrong-key-0123456789abcdef0123"} {
		c := geminitest.Client(t, e.url, key)
		for _, err := range c.Models.All(ctx) {
			if ae := sdkAPIError(t, err); ae.Code != 401 || ae.Status != "UNAUTHENTICATED" {
				t.Errorf("list with key %q: %+v", key, ae)
			}
			break
		}
		_, err := c.Models.Get(ctx, "chat-prod", nil)
		if ae := sdkAPIError(t, err); ae.Code != 401 || ae.Status != "UNAUTHENTICATED" {
			t.Errorf("get with key %q: %+v", key, ae)
		}
	}

	status, body := getGemini(t, e.url+"/v1beta/models?key="+geminiOtherKey, nil)
	if status != 200 || !strings.Contains(string(body), `"models/elsewhere"`) || strings.Contains(string(body), "chat-prod") {
		t.Errorf("?key=: %d %s", status, body)
	}
	if strings.Contains(e.logs.String(), geminiOtherKey) {
		t.Error("the key from the query is in the log")
	}
	status, body = geminitest.Post(t, e.url+"/v1beta/models", tenantKey, `{}`)
	if status != 405 || geminitest.Status(t, body) == "" {
		t.Errorf("POST: %d %s", status, body)
	}
	status, body = getGemini(t, e.url+"/v1beta/models?pageToken=nope", []string{"X-Goog-Api-Key", tenantKey})
	if status != 400 || geminitest.Status(t, body) != "INVALID_ARGUMENT" {
		t.Errorf("a bad pageToken: %d %s", status, body)
	}
}

// TestGeminiModelsCrossSiteRefused: in no-key mode a cross-site browser
// request for the model list is refused like the API's, in Google's
// shape; a same-origin one is served.
func TestGeminiModelsCrossSiteRefused(t *testing.T) {
	e := startProviders(t, []string{"gemini"}, nil, "")
	for _, path := range []string{"/v1beta/models", "/v1beta/models/chat-prod"} {
		status, body := getGemini(t, e.url+path, []string{"Origin", "http://evil.example"})
		if status != 403 || geminitest.Status(t, body) != "PERMISSION_DENIED" {
			t.Errorf("%s cross-site: %d %s", path, status, body)
		}
		status, body = getGemini(t, e.url+path, []string{"Origin", e.url, "Sec-Fetch-Site", "same-origin"})
		if status != 200 || !strings.Contains(string(body), `"models/chat-prod"`) {
			t.Errorf("%s same origin: %d %s", path, status, body)
		}
	}
}

// getGemini GETs url with the headers hdr (name, value, …).
func getGemini(t *testing.T, url string, hdr []string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
