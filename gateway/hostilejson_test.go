package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// Issue 23, "memory from hostile JSON" and the request-body items of its
// Low list, attacked through the listener.

const anthropicAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`

// startBodies serves the usual harness with room for 30 MB bodies and a
// pool, claude, whose one member speaks Anthropic's API: chat calls to it
// are translated. It returns the harness and the Anthropic upstream.
func startBodies(t *testing.T, memory string) (*harness, *upstreamtest.Upstream) {
	t.Helper()
	claude := upstreamtest.New(t, upstreamtest.Raw(200, anthropicAnswer))
	h := start(t, nil, nil, "", func(y string) string {
		y = strings.Replace(y, "max_body: 64KiB", "max_body: 40MiB, max_body_memory: "+memory, 1)
		y = strings.Replace(y, "pools:\n", fmt.Sprintf("  - name: claude\n    type: anthropic\n    url: %s\n    api_key: ${TEST_SEC_KEY}\npools:\n", claude.URL), 1)
		return y + "  - name: claude\n    members:\n      - {backend: claude, model: claude-x}\npinned:\n  - {paths: [batches], pool: chat-prod}\n"
	})
	return h, claude
}

// send posts body to path with key ("" for none) and returns the status
// and the answer, and the bytes the process allocated meanwhile (client
// and gateway both: an upper bound on the gateway's).
func send(t *testing.T, h *harness, path, key string, body []byte) (int, string, uint64) {
	t.Helper()
	return sendAs(t, h, path, key, "application/json", body)
}

// sendAs is send with the media type ct ("" for none).
func sendAs(t *testing.T, h *harness, path, key, ct string, body []byte) (int, string, uint64) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url+path, bytes.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	return resp.StatusCode, string(b), after.TotalAlloc - before.TotalAlloc
}

// jsonArrayBody is {"model": model, key: [item × n]}.
func jsonArrayBody(model, key, item string, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"model":%q,%q:[`, model, key)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// errorOf reads an error answer: its code, OpenAI-style, or its type,
// Anthropic-style (format "anthropic").
func errorOf(t *testing.T, body, format string) (kind, msg string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type, Code, Message string
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not a JSON error: %q", body)
	}
	if format == "anthropic" {
		if e.Type != "error" {
			t.Fatalf("not an Anthropic-style error: %s", body)
		}
		return e.Error.Type, e.Error.Message
	}
	return e.Error.Code, e.Error.Message
}

// TestHostileJSONIsRefusedBeforeDecoding: one authenticated 30 MB body of
// nested arrays to /v1/responses cost 1.2-1.5 GB and 8 s of CPU before its
// 400; a million messages to a pool translated to Anthropic, or a million
// Responses input items, 1.2 GB each. (This test on the code before:
// 1,601 MB allocated for the nested arrays, then a 502; 2,852 MB for the
// million messages, then a 200.) Each is now refused 400, in the
// caller's format and naming the limit, having cost about its body; none
// reaches a backend. Without a key, 401 before the body is read.
func TestHostileJSONIsRefusedBeforeDecoding(t *testing.T) {
	h, claude := startBodies(t, "256MiB")
	nested := []byte(`{"model":"chat-prod","input":` + strings.Repeat("[", 15<<20) + strings.Repeat("]", 15<<20) + `}`)
	tests := []struct {
		name, path, format string
		body               []byte
		limit              string
	}{
		{"30 MB of nested arrays to responses", "/v1/responses", "openai", nested, "128 levels"},
		{"a million messages translated to Anthropic", "/v1/chat/completions", "openai",
			jsonArrayBody("claude", "messages", `{"role":"user","content":"hi"}`, 1_000_000), "messages"},
		{"a million messages to /v1/messages", "/v1/messages", "anthropic",
			jsonArrayBody("chat-prod", "messages", `{"role":"user","content":"hi"}`, 1_000_000), "messages"},
		{"a million Responses input items", "/v1/responses", "openai",
			jsonArrayBody("claude", "input", `{"role":"user","content":"hi"}`, 1_000_000), "input items"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code, answer, _ := send(t, h, tc.path, "", tc.body); code != http.StatusUnauthorized {
				t.Fatalf("without a key: %d %s", code, answer)
			}
			code, answer, spent := send(t, h, tc.path, appKey, tc.body)
			fmt.Printf("%s: body %.1f MB, the request allocated %.1f MB (%.1fx its body) for its %d\n",
				tc.name, float64(len(tc.body))/1e6, float64(spent)/1e6, float64(spent)/float64(len(tc.body)), code)
			if code != http.StatusBadRequest {
				t.Fatalf("with a key: %d %s", code, answer)
			}
			kind, msg := errorOf(t, answer, tc.format)
			if want := map[string]string{"openai": "json_too_complex", "anthropic": "invalid_request_error"}[tc.format]; kind != want || !strings.Contains(msg, tc.limit) {
				t.Fatalf("error %q %q, want %q naming %q", kind, msg, want, tc.limit)
			}
			// The body is read (its bytes, reserved before), then scanned
			// without building anything: 1.2 GB before.
			if spent > 4*uint64(len(tc.body)) {
				t.Fatalf("the request allocated %d bytes for a body of %d", spent, len(tc.body))
			}
		})
	}
	if n := claude.Calls() + h.weu.Calls() + h.sec.Calls(); n != 0 {
		t.Fatalf("%d hostile bodies reached a backend", n)
	}
}

// TestHostileJSONTranslationIsChargedToBodyMemory: a body within the item
// limits whose translation would cost more than server.max_body_memory
// (100,000 two-byte messages: a struct of hundreds of bytes each) gets
// 413 before it is decoded; one that fits is translated and answered.
func TestHostileJSONTranslationIsChargedToBodyMemory(t *testing.T) {
	h, claude := startBodies(t, "64MiB")
	many := jsonArrayBody("claude", "messages", `{"role":"user","content":"hi"}`, 100_000)
	code, answer, _ := send(t, h, "/v1/chat/completions", appKey, many)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(answer, "max_body_memory") {
		t.Fatalf("translating 100,000 messages within 64 MiB: %d %s", code, answer)
	}
	if claude.Calls() != 0 {
		t.Fatalf("the body reached the backend")
	}
	// Passed through untranslated, the same body costs only itself.
	native := bytes.Replace(many, []byte(`"claude"`), []byte(`"chat-prod"`), 1)
	h.weu.SetScript(upstreamtest.Answer("weu"))
	if code, answer, _ := send(t, h, "/v1/chat/completions", appKey, native); code != http.StatusOK {
		t.Fatalf("the same body, untranslated: %d %s", code, answer)
	}
	few := jsonArrayBody("claude", "messages", `{"role":"user","content":"hi"}`, 1000)
	if code, answer, _ := send(t, h, "/v1/chat/completions", appKey, few); code != http.StatusOK {
		t.Fatalf("1,000 messages translated: %d %s", code, answer)
	}
	if claude.Calls() != 1 {
		t.Fatalf("%d calls to the backend, want 1", claude.Calls())
	}
}

// TestJSONWithTrailingDataIsRefused: a JSON body with a second value
// after the first was forwarded, and an upstream that reads the last
// value (or the first) may read another model than the one routed. It
// gets 400 and reaches no backend; without a key, 401.
func TestJSONWithTrailingDataIsRefused(t *testing.T) {
	h, claude := startBodies(t, "256MiB")
	const js = "application/json"
	for _, tc := range []struct{ name, path, ct, body string }{
		{"a second object", "/v1/chat/completions", js, `{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}{"model":"o1-pro"}`},
		{"garbage", "/v1/chat/completions", js, `{"model":"chat-prod","messages":[]} x`},
		{"on /v1/messages", "/v1/messages", js, `{"model":"chat-prod","max_tokens":5,"messages":[]}[]`},
		{"on a pinned path", "/v1/batches", js, `{"input_file_id":"file-1","endpoint":"/v1/chat/completions"}{}`},
		{"on a pinned path without a media type", "/v1/batches", "", `{"input_file_id":"file-1"} {"input_file_id":"file-2"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, answer, _ := sendAs(t, h, tc.path, "", tc.ct, []byte(tc.body)); code != http.StatusUnauthorized {
				t.Fatalf("without a key: %d %s", code, answer)
			}
			code, answer, _ := sendAs(t, h, tc.path, appKey, tc.ct, []byte(tc.body))
			if code != http.StatusBadRequest || !strings.Contains(answer, "after the JSON value") {
				t.Fatalf("%d %s", code, answer)
			}
		})
	}
	if n := claude.Calls() + h.weu.Calls() + h.sec.Calls(); n != 0 {
		t.Fatalf("%d bodies with trailing data reached a backend", n)
	}
}

// TestMalformedChunkedBodyGets400: a chunked body whose chunk size is not
// hex got an empty 200 OK (logged 499, as if the client had gone). It
// gets a 400 in the API's format; without a key, 401.
func TestMalformedChunkedBodyGets400(t *testing.T) {
	h, _ := startBodies(t, "256MiB")
	addr := strings.TrimPrefix(h.url, "http://")
	for _, tc := range []struct {
		name, key string
		want      int
	}{
		{"with a key", appKey, http.StatusBadRequest},
		{"without a key", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			auth := ""
			if tc.key != "" {
				auth = "Authorization: Bearer " + tc.key + "\r\n"
			}
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
				"10\r\n{\"model\":\"chat-p\r\nzz\r\nrod\"}\r\n0\r\n\r\n", auth)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if tc.want == http.StatusBadRequest {
				if code, _ := errorOf(t, string(body), "openai"); code != "invalid_body" {
					t.Fatalf("code %q: %s", code, body)
				}
			}
		})
	}
	if n := h.weu.Calls() + h.sec.Calls(); n != 0 {
		t.Fatalf("%d malformed bodies reached a backend", n)
	}
}

// TestAmbiguousMultipartIsRefused: a form part whose content began with
// the boundary was one field to the gateway and two to Python's parser
// (model=evilmodel, then model=chat), and a "Model" part passed beside
// "model": the gateway routed one model and the upstream could read
// another. Both get 400 and reach no backend; without a key, 401. A
// plain form still goes through.
func TestAmbiguousMultipartIsRefused(t *testing.T) {
	h, _ := startBodies(t, "256MiB")
	h.weu.SetScript(upstreamtest.Raw(200, `{"text":"hi"}`))
	lines := func(l ...string) string { return strings.Join(l, "\r\n") + "\r\n" }
	tests := []struct {
		name, body string
		want       int
	}{
		{"a part that starts with the boundary", lines(
			"--B", `Content-Disposition: form-data; name="file"; filename="a.wav"`, "",
			"--B", `Content-Disposition: form-data; name="model"`, "", "evilmodel",
			"--B", `Content-Disposition: form-data; name="model"`, "", "chat-prod", "--B--"), http.StatusBadRequest},
		{"a Model part", lines(
			"--B", `Content-Disposition: form-data; name="Model"`, "", "evilmodel",
			"--B", `Content-Disposition: form-data; name="model"`, "", "chat-prod", "--B--"), http.StatusBadRequest},
		{"a plain form", lines(
			"--B", `Content-Disposition: form-data; name="file"; filename="a.wav"`, "", "RIFF",
			"--B", `Content-Disposition: form-data; name="model"`, "", "chat-prod", "--B--"), http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, key := range []string{"", appKey} {
				req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/audio/transcriptions", strings.NewReader(tc.body))
				req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
				want := tc.want
				if key != "" {
					req.Header.Set("Authorization", "Bearer "+key)
				} else {
					want = http.StatusUnauthorized
				}
				resp, err := testClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("key %v: %d %s", key != "", resp.StatusCode, b)
				}
				if want == http.StatusBadRequest && !strings.Contains(string(b), "ambiguous") {
					t.Fatalf("the refusal does not say why: %s", b)
				}
			}
		})
	}
	if n := h.weu.Calls(); n != 1 {
		t.Fatalf("%d forms reached the backend, want only the plain one", n)
	}
}
