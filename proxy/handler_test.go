package proxy

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		path  string
		kind  pathKind
		op    route.Operation
		dep   string
		model string
	}{
		{"/v1/chat/completions", pathAPI, route.ChatCompletions, "", ""},
		{"/v1/chat/completions/", pathAPI, route.ChatCompletions, "", ""},
		{"/v1/completions", pathAPI, route.Completions, "", ""},
		{"/v1/embeddings", pathAPI, route.Embeddings, "", ""},
		{"/chat/completions", pathAPI, route.ChatCompletions, "", ""},
		{"/openai/v1/embeddings", pathAPI, route.Embeddings, "", ""},
		{"/openai/deployments/chat-prod/chat/completions", pathAPI, route.ChatCompletions, "chat-prod", ""},
		{"/openai/deployments/emb/embeddings", pathAPI, route.Embeddings, "emb", ""},
		{"/v1/models", pathModels, "", "", ""},
		{"/openai/v1/models", pathModels, "", "", ""},
		{"/v1/models/gpt-4o", pathModels, "", "", "gpt-4o"},
		{"/v1/images/generations", pathAPI, route.ImagesGenerations, "", ""},
		{"/v1/audio/transcriptions", pathAPI, route.AudioTranscriptions, "", ""},
		{"/openai/deployments/whisper/audio/transcriptions", pathAPI, route.AudioTranscriptions, "whisper", ""},
		{"/openai/deployments/dalle/images/generations", pathAPI, route.ImagesGenerations, "dalle", ""},
		{"/v1/responses", pathAPI, route.Responses, "", ""},
		{"/openai/v1/responses", pathAPI, route.Responses, "", ""},
		{"/openai/responses", pathAPI, route.Responses, "", ""},
		{"/v1/responses/resp_1", pathObject, route.Responses, "", "responses/resp_1"},
		{"/openai/responses/resp_1/input_items", pathObject, route.Responses, "", "responses/resp_1/input_items"},
		{"/v1/moderations", pathAPI, route.Moderations, "", ""},
		{"/v1/files", pathUnknown, "", "", ""},
		{"/openai/deployments//chat/completions", pathUnknown, "", "", ""},
		{"/openai/deployments/x/images", pathUnknown, "", "", ""},
		{"/openai/other", pathUnknown, "", "", ""},
		{"/v1/messages", pathAPI, route.Messages, "", ""},
		{"/v1/messages/count_tokens", pathAPI, route.CountTokens, "", ""},
		{"/openai/v1/messages", pathUnknown, "", "", ""},
		{"/", pathUnknown, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			kind, op, dep, model := classify(tc.path)
			if kind != tc.kind || op != tc.op || dep != tc.dep || model != tc.model {
				t.Fatalf("classify = %v %q %q %q", kind, op, dep, model)
			}
		})
	}
}

// chunkReader returns its chunks one Read at a time, then err.
type chunkReader struct {
	chunks []string
	err    error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, c.err
	}
	n := copy(p, c.chunks[0])
	c.chunks = c.chunks[1:]
	return n, nil
}

func TestCopyBodyTerminatesPartialEvent(t *testing.T) {
	broken := errors.New("reset")
	tests := []struct {
		name   string
		chunks []string
		err    error
		want   string
	}{
		{"clean end", []string{"data: a\n\n", "data: b\n\n"}, io.EOF, "data: a\n\ndata: b\n\n"},
		{"break at event boundary", []string{"data: a\n\n"}, broken, "data: a\n\n"},
		{"break mid-line", []string{"data: a\n\n", "data: {\"par"}, broken, "data: a\n\ndata: {\"par\n\n"},
		{"break after one newline", []string{"data: a\n"}, broken, "data: a\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			_, err := copyBody(w, &chunkReader{chunks: tc.chunks, err: tc.err}, true, &streamBufs)
			if (tc.err == io.EOF) != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if got := w.Body.String(); got != tc.want {
				t.Fatalf("wrote %q, want %q", got, tc.want)
			}
			if !w.Flushed {
				t.Fatal("stream not flushed")
			}
		})
	}
}

func TestStreamErrorEventIsOneEvent(t *testing.T) {
	ev := string(streamErrorEvent(translate.OpenAI, `quote " and newline`+"\n", "c"))
	if !strings.HasPrefix(ev, "data: {\"error\":") || !strings.HasSuffix(ev, "}\n\n") || strings.Count(ev, "\n") != 2 {
		t.Fatalf("event %q", ev)
	}
}

func TestRequestID(t *testing.T) {
	tests := []struct {
		in   string
		keep bool
	}{
		{"abc-123", true},
		{"", false},
		{"has space", false},
		{strings.Repeat("x", 129), false},
		{"ctrl\x01", false},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("POST", "/", nil)
		if tc.in != "" {
			r.Header.Set("X-Request-Id", tc.in)
		}
		got := requestID(r)
		if (got == tc.in) != tc.keep || len(got) == 0 {
			t.Errorf("requestID(%q) = %q", tc.in, got)
		}
	}
}

// TestRefusedRequestsAreLogged is the regression test for requests to
// unknown routes (404), with the wrong method (405) or key (401) never
// reaching the request log.
func TestRefusedRequestsAreLogged(t *testing.T) {
	tests := []struct {
		name, method, path string
		status             int
	}{
		{"unknown route", http.MethodPost, "/v1/no/such/route", http.StatusNotFound},
		{"wrong method", http.MethodGet, "/v1/chat/completions", http.StatusMethodNotAllowed},
		{"wrong key", http.MethodPost, "/v1/chat/completions", http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			h := &Handler{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			h.Update(&Routes{Pools: map[string]*route.Pool{}, Keys: []Key{NewKey("app", "app-key-0123456789abcdef")}})
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(`{}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &got); err != nil {
				t.Fatalf("want one request log line, got %q: %v", logs.String(), err)
			}
			if got["msg"] != "request" || got["method"] != tc.method || got["path"] != tc.path ||
				got["status"] != float64(tc.status) || got["request_id"] != resp.Header.Get("X-Request-Id") {
				t.Fatalf("log line %v", got)
			}
		})
	}
}
