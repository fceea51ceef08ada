package engine

// Regression tests for issue 23, items 4, 5 and 9: paths that skipped the
// router, path traversal on pinned and unknown routes, and what
// unknown_paths forwards. Every request is written byte for byte on a
// loopback connection, so that no client cleans its path first, and the
// upstreams record what reached them.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
)

// The keys of pathSetup: wide may use everything; cheap only the pool
// cheap (backend weu); oaiPool only the pool chat-oai, whose backend oai
// takes unknown_paths; miniOnly only the model gpt-4o-mini.
const (
	wideKey     = "wide-key-0123456789abcdef"
	cheapKey    = "cheap-key-0123456789abcdef"
	oaiPoolKey  = "oaipool-key-0123456789abcd"
	miniOnlyKey = "minionly-key-0123456789abc"
)

// pathSetup is a gateway with an openai backend oai (which takes
// unknown_paths, listing paths) and an azure backend weu (files are pinned
// to it), the keys above, and what each upstream received.
type pathSetup struct {
	*served
	oai, weu *upstreamtest.Upstream
}

func startPaths(t *testing.T, paths string, keyed bool) *pathSetup {
	t.Helper()
	clk := fakeclock.New()
	dir := tenant.NewDirectory(clk, nil)
	if keyed {
		dir.SetConfig([]tenant.ConfigKey{
			{Secret: wideKey, Principal: tenant.Principal{ID: "wide", Name: "wide"}},
			{Secret: cheapKey, Principal: tenant.Principal{ID: "cheap", Name: "cheap", Pools: []string{"cheap"}}},
			{Secret: oaiPoolKey, Principal: tenant.Principal{ID: "oaipool", Name: "oaipool", Pools: []string{"chat-oai"}}},
			{Secret: miniOnlyKey, Principal: tenant.Principal{ID: "minionly", Name: "minionly", Models: []string{"gpt-4o-mini"}}},
		}, nil)
	}
	lim := tenant.NewLimiter(clk, tenant.NewSpend(clk, nil), dir.Team)
	s := &pathSetup{
		oai: upstreamtest.New(t, upstreamtest.Raw(200, `{"object":"list","data":[]}`)),
		weu: upstreamtest.New(t, answer("weu")),
	}
	s.served = serveDeps(t, fmt.Sprintf(`log: {format: json, level: debug}
server: {drain_delay: 0s}
backends:
  - {name: oai, type: openai, url: %q, api_key: "${TEST_SEC_KEY}", probe: {disabled: true}}
  - {name: weu, type: azure, url: %q, api_key: "${TEST_WEU_KEY}", probe: {disabled: true}}
pools:
  - name: cheap
    members: [{backend: weu, model: gpt-4o-mini}]
  - name: chat-oai
    members: [{backend: oai, model: gpt-4o}]
pinned:
  - {paths: [files], backend: weu}
unknown_paths:
  backend: oai
  paths: %s
`, s.oai.URL+"/v1", s.weu.URL, paths), Deps{Resolver: dir, Admission: lim})
	return s
}

// raw sends method and target (as written on the wire) with key ("": none)
// and body on a connection of its own, and returns the status and body.
func (s *pathSetup) raw(t *testing.T, method, target, key, body string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, target, len(body))
	if key != "" {
		req += "Authorization: Bearer " + key + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// callers are who attacks: a restricted key, another key, and no key.
var callers = []struct{ name, key string }{{"restricted key", cheapKey}, {"another key", wideKey}, {"no key", ""}}

// errorOf decodes an error body: OpenAI's ({"error":{…}}) or Anthropic's
// ({"type":"error","error":{…}}).
func errorOf(t *testing.T, body string) (typ, errType, code string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type string `json:"type"`
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not a JSON error body: %s", body)
	}
	return e.Type, e.Error.Type, e.Error.Code
}

// TestEmptySegmentPathsAreRoutedByModel (issue 23, item 4): with
// unknown_paths taking every path, /v1//chat/completions and
// /openai/v1//chat/completions are the chat API, routed by their model
// (a key limited to pool cheap gets 403 for another pool's model, and
// nothing reaches that pool's backend), not forwarded with the model
// untouched; /v1/x/../chat/completions is refused with 400 before any key
// is checked.
func TestEmptySegmentPathsAreRoutedByModel(t *testing.T) {
	s := startPaths(t, `["*"]`, true)
	const other = `{"model":"chat-oai","messages":[{"role":"user","content":"hi"}]}`
	for _, path := range []string{"/v1//chat/completions", "/openai/v1//chat/completions", "//v1/chat/completions/"} {
		if status, body := s.raw(t, "POST", path, cheapKey, other); status != http.StatusForbidden {
			t.Fatalf("%s from the restricted key: %d %s", path, status, body)
		} else if _, _, code := errorOf(t, body); code != "model_not_allowed" {
			t.Fatalf("%s from the restricted key: %s", path, body)
		}
		if status, body := s.raw(t, "POST", path, "", other); status != http.StatusUnauthorized {
			t.Fatalf("%s without a key: %d %s", path, status, body)
		}
	}
	if n := s.oai.Calls(); n != 0 {
		t.Fatalf("the backend of unknown_paths got %d calls", n)
	}
	// Another key may use chat-oai: the call is routed by the pool, the
	// model the pool's.
	status, body := s.raw(t, "POST", "/openai/v1//chat/completions", wideKey, `{"model":"chat-oai","messages":[]}`)
	if status != http.StatusOK || s.oai.Calls() != 1 || s.oai.Path(0) != "/v1/chat/completions" || !strings.Contains(s.oai.Body(0), `"model":"gpt-4o"`) {
		t.Fatalf("another key: %d %s; upstream got %d calls", status, body, s.oai.Calls())
	}
	// The restricted key's own pool, by the doubled slash.
	if status, body := s.raw(t, "POST", "/v1//chat/completions", cheapKey, `{"model":"cheap","messages":[]}`); status != http.StatusOK || s.weu.Calls() != 1 {
		t.Fatalf("the restricted key's pool: %d %s", status, body)
	}
	for _, c := range callers {
		for _, path := range []string{"/v1/x/../chat/completions", "/openai/v1/x/%2e%2e/chat/completions"} {
			status, body := s.raw(t, "POST", path, c.key, other)
			if _, _, code := errorOf(t, body); status != http.StatusBadRequest || code != "invalid_path" {
				t.Fatalf("%s from %s: %d %s", path, c.name, status, body)
			}
		}
	}
	if s.oai.Calls() != 1 || s.weu.Calls() != 1 {
		t.Fatalf("refused paths reached upstream: oai %d calls, weu %d", s.oai.Calls(), s.weu.Calls())
	}
}

// TestPathTraversalRefused (issue 23, item 5): dot segments, however
// escaped (%2e%2e, ..%2f, double-escaped, mixed case, "..;", a
// backslash), on a pinned route, an unknown_paths route and a stored
// response, get 400 invalid_path in the caller's format from every
// caller, and no upstream sees them.
func TestPathTraversalRefused(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		s := startPaths(t, `["*"]`, keyed)
		for _, path := range []string{
			"/v1/files/../../admin",
			"/v1/files/%2e%2e/%2e%2e/admin",
			"/v1/files/%2E%2e/%2e%2E/admin",
			"/v1/files/..%2f..%2fadmin",
			"/v1/files/..%2F..%2Fadmin",
			"/v1/files/%252e%252e/%252e%252e/admin",
			"/v1/files/%252E%252E%252Fadmin",
			"/v1/files/..;/admin",
			"/v1/files/..\\admin",
			"/v1/files/./file-1",
			"/openai/files/../deployments/x/chat/completions?api-version=2024-10-21",
			"/v1/assistants/../organization/admin_api_keys",
			"/v1/assistants/%2e%2e/%2e%2e/v1/organization",
			"/v1/responses/../files",
			"/v1/messages/../messages/batches",
			"/v1/messages/batches/%2e%2e",
		} {
			for _, c := range callers {
				if !keyed && c.key != "" {
					continue
				}
				status, body := s.raw(t, "GET", path, c.key, "")
				typ, errType, code := errorOf(t, body)
				anthropic := strings.HasPrefix(path, "/v1/messages") // its errors have no code
				if status != http.StatusBadRequest || errType != "invalid_request_error" || !anthropic && code != "invalid_path" {
					t.Fatalf("keys %v, %s from %s: %d %s", keyed, path, c.name, status, body)
				}
				if anthropic != (typ == "error") {
					t.Fatalf("%s: error body %s, Anthropic's format %v", path, body, anthropic)
				}
			}
		}
		if n := s.oai.Calls() + s.weu.Calls(); n != 0 {
			t.Fatalf("keys %v: %d upstream calls for refused paths", keyed, n)
		}
	}
}

// TestTaggedIDHidingADotSegmentRefused (issue 23, item 5): an id crafted
// so that, untagged, it is "..", on a pinned route, an unknown_paths route
// and a stored response, gets 400 and reaches no backend. Without keys
// (where any caller may tag an id) the refusal is the path's, 400
// invalid_path; with keys, a gateway that signs its tags may refuse the
// forged id first (404).
func TestTaggedIDHidingADotSegmentRefused(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		s := startPaths(t, `["*"]`, keyed)
		key := ""
		if keyed {
			key = wideKey
		}
		for _, path := range []string{
			"/v1/files/" + route.TagID("..", "weu") + "/admin",
			"/v1/assistants/" + route.TagID("..", "oai") + "/organization",
			"/v1/responses/" + route.TagID("..", "oai") + "/input_items",
		} {
			status, body := s.raw(t, "GET", path, key, "")
			_, _, code := errorOf(t, body)
			if !(status == http.StatusBadRequest && code == "invalid_path" || keyed && status == http.StatusNotFound) {
				t.Fatalf("keys %v, %s: %d %s", keyed, path, status, body)
			}
		}
		if n := s.oai.Calls() + s.weu.Calls(); n != 0 {
			t.Fatalf("keys %v: %d upstream calls for refused paths", keyed, n)
		}
	}
}

// TestUnknownPathsForwardOnlyWhatIsListed (issue 23, item 9): with
// unknown_paths listing assistants and threads, those reach its backend
// for a key that may use them; a path not listed, and the provider's
// token minting, stored chat completions and admin API (even with "*"),
// get 404 and reach nothing; a path that differs in case or API root
// from a routed or pinned one gets 400.
func TestUnknownPathsForwardOnlyWhatIsListed(t *testing.T) {
	for _, paths := range []string{`[assistants, threads]`, `["*"]`} {
		s := startPaths(t, paths, true)
		for _, tc := range []struct{ method, path string }{
			{"POST", "/v1/realtime/client_secrets"},
			{"POST", "/v1/realtime/sessions"},
			{"POST", "/openai/v1/realtime/transcription_sessions"},
			{"GET", "/v1/chat/completions/chatcmpl-1"},
			{"GET", "/v1/chat/completions/chatcmpl-1/messages"},
			{"POST", "/v1/organization/admin_api_keys"},
			{"GET", "/v1/Organization/projects"},
			{"GET", "/v1/organizations"},
			{"POST", "/v1/admin_api_keys"},
		} {
			for _, c := range []string{wideKey, ""} {
				status, body := s.raw(t, tc.method, tc.path, c, "{}")
				if status != http.StatusNotFound && !(c == "" && status == http.StatusUnauthorized) {
					t.Fatalf("paths %s, %s %s (key %v): %d %s", paths, tc.method, tc.path, c != "", status, body)
				}
			}
		}
		if status, body := s.raw(t, "GET", "/v1/fine_tuning/jobs", wideKey, ""); (paths == `["*"]`) != (status == http.StatusOK) {
			t.Fatalf("paths %s, a path not listed: %d %s", paths, status, body)
		}
		for _, path := range []string{"/v1/Chat/Completions", "/v1/MODELS", "/v1/Files/file-1", "/v1/Realtime",
			"/v1/openai/v1/chat/completions", "/v1/deployments/gpt-4o/chat/completions", "/openai/v1/v1/Chat/Completions"} {
			status, body := s.raw(t, "POST", path, wideKey, `{"model":"gpt-4o"}`)
			if _, _, code := errorOf(t, body); status != http.StatusBadRequest || code != "invalid_path" {
				t.Fatalf("paths %s, %s: %d %s", paths, path, status, body)
			}
		}
		base := s.oai.Calls()
		if paths == `["*"]` {
			base-- // fine_tuning/jobs
		}
		if base != 0 || s.weu.Calls() != 0 {
			t.Fatalf("paths %s: refused paths reached upstream (oai %d, weu %d)", paths, s.oai.Calls(), s.weu.Calls())
		}
		status, body := s.raw(t, "GET", "/v1/assistants?limit=2", wideKey, "")
		n := s.oai.Calls()
		if status != http.StatusOK || s.oai.Path(n-1) != "/v1/assistants?limit=2" || s.oai.Header(n-1).Get("Authorization") != "Bearer "+secSecret {
			t.Fatalf("paths %s, a listed path: %d %s", paths, status, body)
		}
	}
}

// TestUnknownPathsOptInByName: the provider's realtime client secrets are
// forwarded when unknown_paths.paths names them, and only them.
func TestUnknownPathsOptInByName(t *testing.T) {
	s := startPaths(t, `[realtime/client_secrets]`, true)
	if status, body := s.raw(t, "POST", "/v1/realtime/client_secrets", wideKey, "{}"); status != http.StatusOK || s.oai.Calls() != 1 {
		t.Fatalf("named: %d %s", status, body)
	}
	if status, body := s.raw(t, "POST", "/v1/realtime/sessions", wideKey, "{}"); status != http.StatusNotFound || s.oai.Calls() != 1 {
		t.Fatalf("not named: %d %s", status, body)
	}
}

// TestUnknownPathsKeepToTheKeysScope (issue 23, item 9): a key limited to
// pools may use unknown_paths only when one of its pools has that
// backend; a key limited to models never (the body's model is not read);
// both get 403 path_not_allowed and nothing reaches the backend. A key
// without limits may; no key gets 401.
func TestUnknownPathsKeepToTheKeysScope(t *testing.T) {
	s := startPaths(t, `[assistants, threads]`, true)
	body := `{"model":"o1-pro","instructions":"x"}`
	for _, tc := range []struct {
		name, key string
		want      int
	}{
		{"a key limited to another pool", cheapKey, http.StatusForbidden},
		{"a key limited to models", miniOnlyKey, http.StatusForbidden},
		{"no key", "", http.StatusUnauthorized},
		{"a wrong key", "not-a-key-0123456789abcdef", http.StatusUnauthorized},
	} {
		status, b := s.raw(t, "POST", "/v1/assistants", tc.key, body)
		if status != tc.want {
			t.Fatalf("%s: %d %s", tc.name, status, b)
		}
		if _, _, code := errorOf(t, b); tc.want == http.StatusForbidden && code != "path_not_allowed" {
			t.Fatalf("%s: %s", tc.name, b)
		}
	}
	if n := s.oai.Calls(); n != 0 {
		t.Fatalf("%d calls reached the backend of unknown_paths", n)
	}
	for i, key := range []string{oaiPoolKey, wideKey} {
		if status, b := s.raw(t, "POST", "/v1/threads", key, body); status != http.StatusOK || s.oai.Calls() != i+1 || s.oai.Body(i) != body {
			t.Fatalf("key %d: %d %s", i, status, b)
		}
	}
}
