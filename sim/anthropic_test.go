package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// anthropicClient returns an official Anthropic client for ep that reads
// nothing from the environment.
func anthropicClient(ep Endpoint, opts ...aoption.RequestOption) anthropic.Client {
	base := []aoption.RequestOption{
		aoption.WithoutEnvironmentDefaults(),
		aoption.WithBaseURL(ep.URL + "/"),
		aoption.WithAPIKey(keyOr(ep.Key)),
		aoption.WithMaxRetries(0),
	}
	return anthropic.NewClient(append(base, opts...)...)
}

// oneAnthropic is a config with one anthropic deployment "d1" serving
// model claude-test.
func oneAnthropic(mod func(*Deployment)) Config {
	return one(Anthropic, func(d *Deployment) {
		d.Deployment = "claude-test"
		if mod != nil {
			mod(d)
		}
	})
}

// messageParams is a one-message request for ep.
func messageParams(ep Endpoint, prompt string, maxTokens int64) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     ep.Deployment,
		MaxTokens: maxTokens,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
}

// weatherTool is a tool with required properties of several types.
func weatherTool() anthropic.ToolUnionParam {
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name: "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{
				"location": map[string]any{"type": "string"},
				"unit":     map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
				"days":     map[string]any{"type": "integer"},
				"detailed": map[string]any{"type": "boolean"},
			},
			Required: []string{"location", "unit", "days"},
		},
	}}
}

const weatherArgs = `{"location":"x","unit":"celsius","days":1}`

// anthropicHeaders are what the official client sends, for raw requests.
func anthropicHeaders(key string) map[string]string {
	h := map[string]string{"anthropic-version": "2023-06-01"}
	if key != "" {
		h["x-api-key"] = key
	}
	return h
}

// namedEvent is one server-sent event with its event name.
type namedEvent struct {
	name, data string
}

// sseNamedEvents reads a stream's events, each an optional event: line
// and a data: line followed by a blank line.
func sseNamedEvents(t *testing.T, body string) []namedEvent {
	t.Helper()
	var out []namedEvent
	var cur namedEvent
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data == "" {
				t.Fatalf("blank line without an event before it in %q", body)
			}
			out = append(out, cur)
			cur = namedEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if cur != (namedEvent{}) {
		t.Fatalf("stream ends inside an event: %+v", cur)
	}
	return out
}

func TestAnthropicMessageThroughSDK(t *testing.T) {
	tests := []struct {
		name      string
		maxTokens int64
		wantStop  anthropic.StopReason
		wantWords int
	}{
		{"whole answer", 100, anthropic.StopReasonEndTurn, DefaultReplyTokens},
		{"cut by max_tokens", 5, anthropic.StopReasonMaxTokens, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, oneAnthropic(func(d *Deployment) { d.Key = "sk-ant-test"; d.Model = "claude-test-20990101" }))
			ep := s.Deployments()[0]
			var raw *http.Response
			client := anthropicClient(ep)
			msg, err := client.Messages.New(context.Background(), messageParams(ep, "hello claude", tc.maxTokens), aoption.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(msg.ID, "msg_01") || msg.Model != "claude-test-20990101" || msg.Role != "assistant" {
				t.Errorf("id %q model %q role %q", msg.ID, msg.Model, msg.Role)
			}
			if len(msg.Content) != 1 || msg.Content[0].Type != "text" || len(strings.Fields(msg.Content[0].Text)) != tc.wantWords {
				t.Fatalf("content = %s, want one text block of %d words", msg.RawJSON(), tc.wantWords)
			}
			if msg.StopReason != tc.wantStop || msg.StopSequence != "" {
				t.Errorf("stop_reason %q stop_sequence %q, want %q and null", msg.StopReason, msg.StopSequence, tc.wantStop)
			}
			if msg.Usage.InputTokens != 3 || msg.Usage.OutputTokens != int64(tc.wantWords) {
				t.Errorf("usage = %+v, want 3 input and %d output tokens", msg.Usage, tc.wantWords)
			}
			if !strings.Contains(msg.RawJSON(), `"stop_sequence":null`) {
				t.Errorf("stop_sequence not null in %s", msg.RawJSON())
			}
			if !strings.HasPrefix(raw.Header.Get("Request-Id"), "req_") || raw.Header.Get("X-Request-Id") != "" {
				t.Errorf("request-id %q x-request-id %q, want req_… and none", raw.Header.Get("Request-Id"), raw.Header.Get("X-Request-Id"))
			}
			if st := s.Stats()["d1"]; st.Answered != 1 || st.Tokens != 3+tc.maxTokens {
				t.Errorf("stats = %+v, want 1 answered charged %d tokens", st, 3+tc.maxTokens)
			}
		})
	}
}

func TestAnthropicStreamThroughSDK(t *testing.T) {
	s := startSim(t, oneAnthropic(nil))
	ep := s.Deployments()[0]
	client := anthropicClient(ep)
	stream := client.Messages.NewStreaming(context.Background(), messageParams(ep, "hello stream", 7))
	var msg anthropic.Message
	events := 0
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("accumulate event %d: %v", events, err)
		}
		events++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(msg.Content) != 1 || len(strings.Fields(msg.Content[0].Text)) != 7 || msg.StopReason != anthropic.StopReasonMaxTokens {
		t.Errorf("accumulated %s, want 7 words and stop_reason max_tokens", msg.RawJSON())
	}
	if msg.Usage.InputTokens != 3 || msg.Usage.OutputTokens != 7 {
		t.Errorf("usage = %+v, want 3 in, 7 out", msg.Usage)
	}
	// message_start, content_block_start, 7 deltas, content_block_stop,
	// message_delta, message_stop: the SDK skips ping.
	if events != 12 {
		t.Errorf("%d events, want 12", events)
	}
	if st := s.Stats()["d1"]; st.Answered != 1 || st.InFlight != 0 {
		t.Errorf("stats = %+v, want 1 answered", st)
	}
}

func TestAnthropicStreamShape(t *testing.T) {
	s := startSim(t, oneAnthropic(nil))
	ep := s.Deployments()[0]
	resp, b := do(t, http.MethodPost, ep.URL+"/v1/messages",
		`{"model":"claude-test","max_tokens":3,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders(""))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := sseNamedEvents(t, string(b))
	wantNames := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if len(evs) != len(wantNames) {
		t.Fatalf("%d events, want %d:\n%s", len(evs), len(wantNames), b)
	}
	for i, ev := range evs {
		var typed struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(ev.data), &typed); err != nil || ev.name != wantNames[i] || typed.Type != ev.name {
			t.Errorf("event %d: name %q type %q (%v), want %q", i, ev.name, typed.Type, err, wantNames[i])
		}
	}
	checks := map[int]string{
		0: `"message":{"id":"msg_01`,
		1: `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		2: `{"type":"ping"}`,
		3: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`,
		6: `{"type":"content_block_stop","index":0}`,
		7: `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null,"stop_details":null,"container":null},"usage":{"input_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":3,`,
		8: `{"type":"message_stop"}`,
	}
	for i, want := range checks {
		if !strings.Contains(evs[i].data, want) {
			t.Errorf("event %d = %s\nwant it to contain %s", i, evs[i].data, want)
		}
	}
	if !strings.Contains(evs[0].data, `"content":[],"stop_reason":null,"stop_sequence":null,"stop_details":null,"container":null,"usage":{"input_tokens":1,`) {
		t.Errorf("message_start = %s", evs[0].data)
	}
}

func TestAnthropicToolUseThroughSDK(t *testing.T) {
	s := startSim(t, oneAnthropic(nil))
	ep := s.Deployments()[0]
	client := anthropicClient(ep)
	ctx := context.Background()
	p := messageParams(ep, "what is the weather?", 100)
	p.Tools = []anthropic.ToolUnionParam{weatherTool()}

	check := func(t *testing.T, msg anthropic.Message) anthropic.ToolUseBlock {
		t.Helper()
		if len(msg.Content) != 1 || msg.StopReason != anthropic.StopReasonToolUse {
			t.Fatalf("message = %s, want one tool_use block and stop_reason tool_use", msg.RawJSON())
		}
		tu, ok := msg.Content[0].AsAny().(anthropic.ToolUseBlock)
		if !ok {
			t.Fatalf("block %s is not tool_use", msg.Content[0].RawJSON())
		}
		if !strings.HasPrefix(tu.ID, "toolu_01") || tu.Name != "get_weather" {
			t.Errorf("tool_use id %q name %q", tu.ID, tu.Name)
		}
		var got, want map[string]any
		if err := json.Unmarshal(tu.Input, &got); err != nil {
			t.Fatalf("input %s: %v", tu.Input, err)
		}
		_ = json.Unmarshal([]byte(weatherArgs), &want)
		if !equalJSON(got, want) {
			t.Errorf("input = %s, want %s", tu.Input, weatherArgs)
		}
		return tu
	}

	t.Run("plain", func(t *testing.T) {
		msg, err := client.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		tu := check(t, *msg)
		if msg.Usage.OutputTokens != int64(len((&toolCall{args: weatherArgs}).fragments())) {
			t.Errorf("output tokens %d", msg.Usage.OutputTokens)
		}

		// The tool's result goes back: the answer is text.
		follow := p
		follow.Messages = append(append([]anthropic.MessageParam{}, p.Messages...), msg.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(tu.ID, "sunny, 21 degrees", false)))
		reply, err := client.Messages.New(ctx, follow)
		if err != nil {
			t.Fatal(err)
		}
		if reply.StopReason != anthropic.StopReasonEndTurn || len(reply.Content) != 1 || reply.Content[0].Type != "text" {
			t.Errorf("after the tool result: %s, want text and end_turn", reply.RawJSON())
		}
	})
	t.Run("streamed", func(t *testing.T) {
		stream := client.Messages.NewStreaming(ctx, p)
		var msg anthropic.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		check(t, msg)
	})
	t.Run("tool_choice none", func(t *testing.T) {
		q := p
		q.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
		msg, err := client.Messages.New(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonEndTurn || msg.Content[0].Type != "text" {
			t.Errorf("tool_choice none: %s", msg.RawJSON())
		}
	})
	t.Run("forced tool", func(t *testing.T) {
		q := p
		q.Tools = []anthropic.ToolUnionParam{weatherTool(), {OfTool: &anthropic.ToolParam{
			Name:        "lookup",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"id": map[string]any{"type": "number"}}, Required: []string{"id"}},
		}}}
		q.ToolChoice = anthropic.ToolChoiceParamOfTool("lookup")
		msg, err := client.Messages.New(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Content[0].Name != "lookup" || string(msg.Content[0].Input) != `{"id":1}` {
			t.Errorf("forced tool: %s", msg.RawJSON())
		}
	})
}

func TestAnthropic429ThroughSDK(t *testing.T) {
	clock := fakeclock.New()
	s := startSim(t, oneAnthropic(func(d *Deployment) { d.Quota = Quota{RPM: 60, TPM: 60000} }), WithClock(clock))
	ep := s.Deployments()[0]
	clock.Advance(3200 * time.Millisecond)
	client := anthropicClient(ep)
	for i := range 10 {
		if _, err := client.Messages.New(context.Background(), messageParams(ep, "hello", 10)); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	_, err := client.Messages.New(context.Background(), messageParams(ep, "hello", 10))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *anthropic.Error", err)
	}
	if apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Type() != anthropic.ErrorTypeRateLimitError {
		t.Errorf("status %d type %q, want 429 rate_limit_error", apiErr.StatusCode, apiErr.Type())
	}
	wantMsg := "This request would exceed your organization's rate limit of 60 requests per minute (org: switchover-sim, model: claude-test)."
	if !strings.HasPrefix(apiErr.Message, wantMsg) {
		t.Errorf("message %q, want it to start %q", apiErr.Message, wantMsg)
	}
	if !strings.HasPrefix(apiErr.RequestID, "req_") {
		t.Errorf("request id %q", apiErr.RequestID)
	}
	h := apiErr.Response.Header
	want := map[string]string{
		"Retry-After":                            "7",
		"Retry-After-Ms":                         "",
		"Anthropic-Ratelimit-Requests-Limit":     "60",
		"Anthropic-Ratelimit-Requests-Remaining": "0",
		"Anthropic-Ratelimit-Requests-Reset":     "2026-11-30T12:00:10Z",
		"Anthropic-Ratelimit-Tokens-Limit":       "60000",
		"Anthropic-Ratelimit-Tokens-Remaining":   "9880", // 10000 - 10*(2+10)
		"Anthropic-Ratelimit-Tokens-Reset":       "2026-11-30T12:00:10Z",
		"X-Ratelimit-Remaining-Requests":         "",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if st := s.Stats()["d1"]; st.Refused != 1 || st.Answered != 10 {
		t.Errorf("stats = %+v, want 10 answered, 1 refused", st)
	}

	// Tokens: a request whose estimate does not fit what is left.
	clock.Advance(10 * time.Second)
	_, err = client.Messages.New(context.Background(), messageParams(ep, "hello", 10000))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || !strings.Contains(apiErr.Message, "rate limit of 60000 tokens per minute") {
		t.Errorf("token refusal: %v", err)
	}
}

func TestAnthropicSDKRetriesAfterRetryAfter(t *testing.T) {
	// One request per 200 ms slice. The sim runs on a fake clock that the
	// client's middleware moves past the slice when it sees the 429, while
	// the client itself really waits retry-after (whole seconds: 1) before
	// its one retry.
	clock := fakeclock.New()
	cfg := oneAnthropic(func(d *Deployment) { d.Quota = Quota{RPM: 300} })
	cfg.Slice = 200 * time.Millisecond
	s := startSim(t, cfg, WithClock(clock))
	ep := s.Deployments()[0]
	clock.Advance(50 * time.Millisecond)

	var mu sync.Mutex
	var attempts []attempt
	record := func(r *http.Request, next aoption.MiddlewareNext) (*http.Response, error) {
		a := attempt{sent: time.Now()}
		resp, err := next(r)
		a.answered = time.Now()
		if err == nil {
			a.status = resp.StatusCode
			a.retryAfterMs = resp.Header.Get("retry-after")
			if resp.StatusCode == http.StatusTooManyRequests {
				clock.Advance(200 * time.Millisecond)
			}
		}
		mu.Lock()
		attempts = append(attempts, a)
		mu.Unlock()
		return resp, err
	}
	client := anthropicClient(ep, aoption.WithMaxRetries(1), aoption.WithMiddleware(record))
	ctx := context.Background()
	if _, err := client.Messages.New(ctx, messageParams(ep, "first", 3)); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if _, err := client.Messages.New(ctx, messageParams(ep, "second", 3)); err != nil {
		t.Fatalf("second call (should succeed on its retry): %v", err)
	}
	if st := s.Stats()["d1"]; st.Calls != 3 || st.Answered != 2 || st.Refused != 1 {
		t.Fatalf("stats = %+v, want 3 calls: 2 answered, 1 refused (the retried one)", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 3 || attempts[1].status != 429 || attempts[2].status != 200 {
		t.Fatalf("attempts = %+v, want 200, 429, 200", attempts)
	}
	if attempts[1].retryAfterMs != "1" {
		t.Errorf("retry-after = %q, want 1 (150ms rounded up to a second)", attempts[1].retryAfterMs)
	}
	if gap := attempts[2].sent.Sub(attempts[1].answered); gap < time.Second {
		t.Errorf("client retried after %s, before retry-after 1s", gap)
	}
}

func TestAnthropicOverloadedThroughSDK(t *testing.T) {
	for _, mode := range []FaultMode{FaultOverloaded, FaultDown} {
		t.Run(string(mode), func(t *testing.T) {
			s := startSim(t, oneAnthropic(nil))
			ep := s.Deployments()[0]
			if err := s.SetFault("d1", Fault{Mode: mode}); err != nil {
				t.Fatal(err)
			}
			client := anthropicClient(ep)
			_, err := client.Messages.New(context.Background(), messageParams(ep, "hi", 5))
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Type() != anthropic.ErrorTypeOverloadedError || apiErr.Message != "Overloaded" {
				t.Fatalf("err = %v, want 529 overloaded_error", err)
			}
			if st := s.Stats()["d1"]; st.Errors != 1 || st.Tokens != 0 {
				t.Errorf("stats = %+v, want 1 error, nothing charged", st)
			}
		})
	}
}

func TestAnthropicErrors(t *testing.T) {
	s := startSim(t, oneAnthropic(func(d *Deployment) { d.Key = "sk-ant-right" }))
	ep := s.Deployments()[0]
	body := `{"model":"claude-test","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		hdr        map[string]string
		wantStatus int
		wantBody   string
		counted    bool
	}{
		{"missing key", "POST", "/v1/messages", body, anthropicHeaders(""), 401, `{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"}}`, true},
		{"wrong key", "POST", "/v1/messages", body, anthropicHeaders("sk-ant-wrong"), 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, true},
		{"no anthropic-version", "POST", "/v1/messages", body, map[string]string{"x-api-key": "sk-ant-right"}, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"anthropic-version: header is required"}}`, true},
		{"no max_tokens", "POST", "/v1/messages", `{"model":"claude-test","messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders("sk-ant-right"), 400, `"message":"max_tokens: Field required"`, true},
		{"no model", "POST", "/v1/messages", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders("sk-ant-right"), 400, `"message":"model: Field required"`, true},
		{"no messages", "POST", "/v1/messages", `{"model":"claude-test","max_tokens":5,"messages":[]}`, anthropicHeaders("sk-ant-right"), 400, `"type":"invalid_request_error"`, true},
		{"other model", "POST", "/v1/messages", strings.Replace(body, "claude-test", "claude-other", 1), anthropicHeaders("sk-ant-right"), 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-other"}}`, true},
		{"bad json", "POST", "/v1/messages", `{"model":`, anthropicHeaders("sk-ant-right"), 400, `"type":"invalid_request_error"`, true},
		{"content filter", "POST", "/v1/messages", strings.Replace(body, `"hi"`, `"please trigger-content-filter"`, 1), anthropicHeaders("sk-ant-right"), 400, `{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"}}`, true},
		{"unknown path", "POST", "/v1/complete", body, anthropicHeaders("sk-ant-right"), 404, `{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}`, false},
		{"wrong method", "GET", "/v1/messages", "", anthropicHeaders("sk-ant-right"), 405, `"type":"invalid_request_error"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Stats()["d1"].Calls
			resp, b := do(t, tc.method, ep.URL+tc.path, tc.body, tc.hdr)
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s\nwant %d with %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
			if resp.Header.Get("Request-Id") == "" {
				t.Error("request-id missing")
			}
			if counted := s.Stats()["d1"].Calls > before; counted != tc.counted {
				t.Errorf("counted as a call: %v, want %v", counted, tc.counted)
			}
		})
	}
	st := s.Stats()["d1"]
	if st.Filtered != 1 || st.Rejected != 8 || st.Answered != 0 {
		t.Errorf("stats = %+v, want 1 filtered, 8 rejected", st)
	}
}

func TestAnthropicTruncatedIsRefusal(t *testing.T) {
	s := startSim(t, oneAnthropic(nil))
	ep := s.Deployments()[0]
	client := anthropicClient(ep)
	msg, err := client.Messages.New(context.Background(), messageParams(ep, "trigger-filtered-reply", 100))
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonRefusal || len(strings.Fields(msg.Content[0].Text)) != DefaultReplyTokens/2 {
		t.Errorf("message = %s, want half the words and stop_reason refusal", msg.RawJSON())
	}
}

// equalJSON compares decoded JSON values.
func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
