package gateway_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/ledger"
)

// Secrets a body may hold, which the store must never keep.
const (
	bodyClientSecret  = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
	bodyBackendSecret = "sk-ant-api03-ZYXWVUTSRQPONMLKJIHGFEDCBA-0123"
	bodyViewerKey     = "viewer-key-bodies-0123456789"
)

// withBodies puts a store in the configuration and request_log on the
// chat-prod pool.
func withBodies(db, pool string) func(string) string {
	return func(y string) string {
		y = strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+", viewers: [{name: oncall, key: "+bodyViewerKey+"}]}\nstore: {sqlite: "+db+"}\nkeys:", 1)
		return strings.Replace(y, "  - name: chat-prod\n", "  - name: chat-prod\n    request_log: "+pool+"\n", 1)
	}
}

// recorded waits for the usage row of request id and returns its kept
// bodies (ledger.ErrNotFound when none were kept).
func (h *harness) recorded(id string) (ledger.Bodies, error) {
	h.t.Helper()
	s := h.gw.Ledger()
	poll.Until(h.t, 30*time.Second, func() bool {
		h.clock.Advance(time.Second) // the usage writer flushes on the gateway's (fake) clock
		_, err := s.Request(h.t.Context(), id)
		return err == nil
	}, func() string { return "request " + id + " was not recorded" })
	return s.RequestBodies(h.t.Context(), id)
}

// TestRequestBodiesKeptRedacted: a pool with request_log.bodies keeps a
// call's request and answer, their secrets redacted in the store and
// markup kept as text; a stream keeps its events up to the bound, marked
// truncated with its whole size, and each event reaches the client
// before the backend sends the next (the capture holds nothing back).
func TestRequestBodiesKeptRedacted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	release := make(chan struct{})
	stream := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 20 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"part-%02d \"}}]}\n\n", i)
			w.(http.Flusher).Flush()
			if i == 0 {
				<-release // the client has the first event before the second is sent
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
	plain := upstreamtest.Raw(200, `{"id":"c1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"the backend said `+
		bodyBackendSecret+` and <script>alert(2)</script>"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`)
	h := start(t, []upstreamtest.Step{plain, stream}, []upstreamtest.Step{answer("sec")}, "", withBodies(db, "{bodies: true, max_body_bytes: 1KiB}"))

	// The gateway key and the backend's key are shaped as no rule knows:
	// they are redacted as the configuration's own secrets.
	body := `{"model":"chat-prod","messages":[{"role":"user","content":"my key is ` + bodyClientSecret + ` <img src=x onerror=alert(1)>, ours ` +
		appKey + `, theirs ` + weuSecret + `"}]}`
	resp, b := h.post("/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(b, bodyBackendSecret) {
		t.Fatalf("plain call: %d %s", resp.StatusCode, b)
	}
	got, err := h.recorded(resp.Header.Get("X-Request-Id"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{bodyClientSecret, bodyBackendSecret, appKey, weuSecret} {
		if bytes.Contains(got.Request, []byte(s)) || bytes.Contains(got.Response, []byte(s)) {
			t.Errorf("a secret was stored: %q\nrequest %s\nresponse %s", s, got.Request, got.Response)
		}
	}
	if !bytes.Contains(got.Request, []byte(`my key is `+ledger.Redacted+` <img src=x onerror=alert(1)>, ours `+ledger.Redacted+`, theirs `+ledger.Redacted)) ||
		!bytes.Contains(got.Response, []byte(`the backend said `+ledger.Redacted+` and <script>alert(2)</script>`)) {
		t.Errorf("bodies kept as\nrequest %s\nresponse %s", got.Request, got.Response)
	}
	if got.RequestTruncated || got.ResponseTruncated || got.RequestSize != int64(len(body)) || got.ResponseSize != int64(len(b)) {
		t.Errorf("sizes and truncation: %+v", got)
	}

	// A stream: the first event arrives while the backend holds the rest.
	req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hello"}]}`))
	req.Header.Set("Authorization", "Bearer "+appKey)
	req.Header.Set("Content-Type", "application/json")
	sresp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	br := bufio.NewReader(sresp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.Contains(first, "part-00") {
		t.Fatalf("first event: %q, %v", first, err)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	whole := int64(len(first) + len(rest))
	got, err = h.recorded(sresp.Header.Get("X-Request-Id"))
	if err != nil {
		t.Fatal(err)
	}
	if !got.ResponseTruncated || got.ResponseSize != whole || len(got.Response) > 1024 || !bytes.HasPrefix(got.Response, []byte("data: {")) ||
		!bytes.Contains(got.Response, []byte("part-05")) {
		t.Errorf("the stream kept as %d bytes (truncated %v, size %d of %d):\n%s", len(got.Response), got.ResponseTruncated, got.ResponseSize, whole, got.Response)
	}
}

// TestRequestBodiesOffUnlessAsked: without request_log nothing is kept;
// a key's bodies: false wins over its pool's bodies: true.
func TestRequestBodiesOffUnlessAsked(t *testing.T) {
	for name, mod := range map[string]func(string) string{
		"no request_log": func(y string) string {
			return strings.Replace(y, "keys:", "store: {sqlite: "+filepath.Join(t.TempDir(), "a.db")+"}\nkeys:", 1)
		},
		"the key says no": func(y string) string {
			y = withBodies(filepath.Join(t.TempDir(), "b.db"), "{bodies: true}")(y)
			return strings.Replace(y, "    key: ${TEST_APP_KEY}\n", "    key: ${TEST_APP_KEY}\n    request_log: {bodies: false}\n", 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := startAnswering(t, mod)
			resp, b := h.post("/v1/chat/completions", chat)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if got, err := h.recorded(resp.Header.Get("X-Request-Id")); !errors.Is(err, ledger.ErrNotFound) {
				t.Errorf("bodies kept: %+v, %v", got, err)
			}
		})
	}
}

// TestRequestBodiesNeedTheAdminKey: GET /admin/usage/requests/{id}
// shows the kept bodies to the admin key only: no key, a viewer's key,
// a gateway key and another origin get none of them.
func TestRequestBodiesNeedTheAdminKey(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := startAnswering(t, withBodies(db, "{bodies: true}"))
	body := `{"model":"chat-prod","messages":[{"role":"user","content":"the private prompt"}]}`
	resp, b := h.post("/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	id := resp.Header.Get("X-Request-Id")
	if _, err := h.recorded(id); err != nil {
		t.Fatal(err)
	}
	path := "/admin/usage/requests/" + id
	for name, key := range map[string]string{"no key": "", "a viewer's key": bodyViewerKey, "a gateway key": appKey} {
		if code, out := h.adminDo(http.MethodGet, path, "", key); code != http.StatusUnauthorized || strings.Contains(fmt.Sprint(out), "private prompt") {
			t.Errorf("%s: %d %v, want 401", name, code, out)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, h.admin+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Origin", "https://evil.example")
	oresp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ob, _ := io.ReadAll(oresp.Body)
	oresp.Body.Close()
	if oresp.StatusCode != http.StatusForbidden || strings.Contains(string(ob), "private prompt") {
		t.Errorf("another origin: %d %s, want 403", oresp.StatusCode, ob)
	}
	code, out := h.adminDo(http.MethodGet, path, "", adminKey)
	bodies, _ := out["bodies"].(map[string]any)
	if code != http.StatusOK || bodies["kept"] != true || !strings.Contains(fmt.Sprint(bodies["request"]), "the private prompt") ||
		!strings.Contains(fmt.Sprint(bodies["response"]), "hello from weu") {
		t.Errorf("with the admin key: %d %v", code, out)
	}
	// The list never carries bodies.
	if code, out := h.adminDo(http.MethodGet, "/admin/usage/requests", "", adminKey); code != http.StatusOK || strings.Contains(fmt.Sprint(out), "private prompt") {
		t.Errorf("the list: %d %v", code, out)
	}
}
