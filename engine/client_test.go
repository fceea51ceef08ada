package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// chatChunks streams n OpenAI chat.completion.chunk events, then a final
// chunk and [DONE]; after dieAfter events (if >= 0) the connection drops.
func chatChunks(name string, n, dieAfter int) upstreamtest.Step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := 0; i < n; i++ {
			if i == dieAfter {
				conn, buf, _ := w.(http.Hijacker).Hijack()
				buf.Flush()
				conn.Close()
				return
			}
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"`+name+` "},"finish_reason":null}]}`+"\n\n")
			f.Flush()
		}
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

func (h *harness) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(h.url + "/v1/"),
		option.WithAPIKey(appKey),
		option.WithMaxRetries(0),
	}, opts...)...)
}

var params = openai.ChatCompletionNewParams{
	Model:    "chat-prod",
	Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
}

func TestOpenAIClientPlainWithFailover(t *testing.T) {
	h := start(t, []upstreamtest.Step{status(503)}, []upstreamtest.Step{answer("sec")}, "")
	c := h.client()
	var raw *http.Response
	resp, err := c.Chat.Completions.New(t.Context(), params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "hello from sec" {
		t.Fatalf("content %q", got)
	}
	if raw.Header.Get("X-Switchover-Failover") != "true" || raw.Header.Get("X-Switchover-Backend") != "aoai-swedencentral" {
		t.Fatalf("headers %v", raw.Header)
	}
}

func TestOpenAIClientStreamingWithFailoverBeforeFirstByte(t *testing.T) {
	h := start(t, []upstreamtest.Step{status(429, "Retry-After", "5")}, []upstreamtest.Step{chatChunks("sec", 4, -1)}, "")
	c := h.client()
	var raw *http.Response
	stream := c.Chat.Completions.NewStreaming(t.Context(), params, option.WithResponseInto(&raw))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "sec sec sec sec " {
		t.Fatalf("content %q", got)
	}
	if raw.Header.Get("X-Switchover-Backend") != "aoai-swedencentral" || raw.Header.Get("X-Switchover-Attempts") != "2" {
		t.Fatalf("headers %v", raw.Header)
	}
}

func TestOpenAIClientSeesMidStreamFailureAsError(t *testing.T) {
	h := start(t, []upstreamtest.Step{chatChunks("weu", 10, 3)}, []upstreamtest.Step{chatChunks("sec", 4, -1)}, "")
	c := h.client()
	stream := c.Chat.Completions.NewStreaming(t.Context(), params)
	n := 0
	for stream.Next() {
		n++
	}
	var se *ssestream.StreamError
	if err := stream.Err(); !errors.As(err, &se) || !strings.Contains(err.Error(), "failed mid-way") {
		t.Fatalf("stream error %v, want the gateway's error event", err)
	}
	if n != 3 {
		t.Fatalf("%d chunks before the error, want 3", n)
	}
	if h.sec.Calls() != 0 {
		t.Fatal("failed over after bytes reached the client")
	}
}

func TestMidStreamFailureWireFormat(t *testing.T) {
	h := start(t, []upstreamtest.Step{chatChunks("weu", 10, 2)}, []upstreamtest.Step{answer("sec")}, "")
	req, _ := http.NewRequest("POST", h.url+"/v1/chat/completions", strings.NewReader(`{"model":"chat-prod","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+appKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the response did not end cleanly: %v", err)
	}
	events := strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n")
	if len(events) != 3 {
		t.Fatalf("events %q", events)
	}
	last := events[2]
	if !strings.HasPrefix(last, `data: {"error":{"message":"switchover: the stream from backend aoai-westeurope failed mid-way`) ||
		!strings.Contains(last, `"code":"upstream_stream_error"`) {
		t.Fatalf("last event %q", last)
	}
}

func TestAzureOpenAIClient(t *testing.T) {
	h := start(t, []upstreamtest.Step{upstreamtest.Reset}, []upstreamtest.Step{answer("sec")}, "")
	c := openai.NewClient(
		azure.WithEndpoint(h.url, "2024-10-21"),
		azure.WithAPIKey(appKey),
		azure.WithUnsafeAllowHTTP(),
		option.WithMaxRetries(0),
	)
	var raw *http.Response
	resp, err := c.Chat.Completions.New(t.Context(), params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "hello from sec" || raw.Request.URL.Path != "/openai/deployments/chat-prod/chat/completions" {
		t.Fatalf("content %q via %s", resp.Choices[0].Message.Content, raw.Request.URL)
	}
	if raw.Header.Get("X-Switchover-Failover") != "true" {
		t.Fatal("failover not reported")
	}
}

func TestOpenAIClientGetsExhaustedAsAPIError(t *testing.T) {
	h := start(t, []upstreamtest.Step{status(429, "Retry-After", "30")}, []upstreamtest.Step{status(429, "Retry-After", "40")}, "")
	c := h.client()
	_, err := c.Chat.Completions.New(t.Context(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "backends_exhausted" {
		t.Fatalf("err = %v", err)
	}
	if ra := apiErr.Response.Header.Get("Retry-After"); ra != "30" {
		t.Fatalf("Retry-After %q, want 30 (the soonest backend)", ra)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	canceled := make(chan struct{})
	arrived := make(chan struct{})
	slowStream := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		close(arrived)
		<-r.Context().Done()
		close(canceled)
	}
	h := start(t, []upstreamtest.Step{slowStream}, []upstreamtest.Step{answer("sec")}, "")
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "POST", h.url+"/v1/chat/completions", strings.NewReader(`{"model":"chat-prod","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+appKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-arrived
	cancel()
	resp.Body.Close()
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("upstream request not cancelled after the client went away")
	}
	if s := h.engine.Backends["aoai-westeurope"].Breaker.Snapshot(); s.Failures != 0 {
		t.Fatal("client disconnect counted against the backend")
	}
}
