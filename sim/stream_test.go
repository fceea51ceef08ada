package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

func TestStreamThroughClient(t *testing.T) {
	tests := []struct {
		name         string
		fl           Flavour
		maxTokens    int64
		includeUsage bool
		wantFinish   string
		wantWords    int
	}{
		{"azure with usage", Azure, 0, true, "stop", DefaultReplyTokens},
		{"azure cut, no usage", Azure, 4, false, "length", 4},
		{"openai with usage", OpenAI, 6, true, "length", 6},
		{"openai no usage", OpenAI, 0, false, "stop", DefaultReplyTokens},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(tc.fl, nil))
			ep := s.Deployments()[0]
			client := newClient(ep)
			p := chatParams(ep, "hello stream", tc.maxTokens) // 12 chars: 3 tokens
			if tc.includeUsage {
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			stream := client.Chat.Completions.NewStreaming(context.Background(), p)
			var acc openai.ChatCompletionAccumulator
			chunks, usageChunks := 0, 0
			for stream.Next() {
				c := stream.Current()
				if !acc.AddChunk(c) {
					t.Fatalf("accumulator rejected chunk %d: %s", chunks, c.RawJSON())
				}
				if len(c.Choices) == 0 && c.Usage.TotalTokens > 0 {
					usageChunks++
				}
				chunks++
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			if len(acc.Choices) != 1 {
				t.Fatalf("%d choices accumulated", len(acc.Choices))
			}
			c := acc.Choices[0]
			if c.FinishReason != tc.wantFinish || len(strings.Fields(c.Message.Content)) != tc.wantWords {
				t.Errorf("finish %q content %q, want %q with %d words", c.FinishReason, c.Message.Content, tc.wantFinish, tc.wantWords)
			}
			if tc.includeUsage {
				if usageChunks != 1 || acc.Usage.PromptTokens != 3 || acc.Usage.CompletionTokens != int64(tc.wantWords) {
					t.Errorf("%d usage chunks, usage %+v; want one, 3 prompt and %d completion tokens", usageChunks, acc.Usage, tc.wantWords)
				}
			} else if usageChunks != 0 {
				t.Errorf("%d usage chunks without include_usage", usageChunks)
			}
			if st := s.Stats()["d1"]; st.Answered != 1 || st.InFlight != 0 {
				t.Errorf("stats = %+v, want 1 answered", st)
			}
		})
	}
}

// sseEvents reads the data lines of a stream.
func sseEvents(t *testing.T, resp *http.Response) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	blank := true
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			blank = true
			continue
		}
		if !blank {
			t.Fatalf("event without a blank line before it: %q", line)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		out = append(out, data)
		blank = false
	}
	return out
}

func TestAzureStreamShape(t *testing.T) {
	s := startSim(t, one(Azure, nil))
	ep := s.Deployments()[0]
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`
	resp, err := noKeepAlive.Post(chatPath(ep), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	evs := sseEvents(t, resp)
	// prompt filter, role, 2 words, finish, usage, [DONE]
	if len(evs) != 7 || evs[6] != "[DONE]" {
		t.Fatalf("%d events, last %q; want 7 ending in [DONE]:\n%s", len(evs), evs[len(evs)-1], strings.Join(evs, "\n"))
	}
	type ev struct {
		ID                  string            `json:"id"`
		Object              string            `json:"object"`
		Created             int64             `json:"created"`
		Choices             []json.RawMessage `json:"choices"`
		PromptFilterResults []json.RawMessage `json:"prompt_filter_results"`
		Usage               *usage            `json:"usage"`
	}
	parse := func(i int) ev {
		var e ev
		if err := json.Unmarshal([]byte(evs[i]), &e); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		return e
	}
	first := parse(0)
	if first.ID != "" || first.Object != "" || first.Created != 0 || len(first.Choices) != 0 || len(first.PromptFilterResults) != 1 {
		t.Errorf("first event = %s, want empty id/object/choices and prompt_filter_results", evs[0])
	}
	for i := 1; i <= 5; i++ {
		if e := parse(i); e.Object != "chat.completion.chunk" || !strings.HasPrefix(e.ID, "chatcmpl-") {
			t.Errorf("event %d = %s", i, evs[i])
		}
	}
	if !strings.Contains(evs[1], `"delta":{"role":"assistant","content":""}`) {
		t.Errorf("role chunk = %s", evs[1])
	}
	if !strings.Contains(evs[4], `"delta":{},"logprobs":null,"finish_reason":"length"`) {
		t.Errorf("finish chunk = %s", evs[4])
	}
	if u := parse(5); len(u.Choices) != 0 || u.Usage == nil || u.Usage.CompletionTokens != 2 {
		t.Errorf("usage chunk = %s", evs[5])
	}
}

func TestStreamTiming(t *testing.T) {
	w := &recordWaiter{}
	cfg := one(OpenAI, func(d *Deployment) {
		d.Latency = Latency{Median: 400 * time.Millisecond, FirstToken: 100 * time.Millisecond, PerToken: 20 * time.Millisecond}
	})
	s := startSim(t, cfg, WithWaiter(w))
	ep := s.Deployments()[0]
	body := `{"model":"chat-prod","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`
	resp, b := do(t, http.MethodPost, chatPath(ep), body, nil)
	if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		t.Fatalf("status %d body %s", resp.StatusCode, b)
	}
	// role chunk after first_token, 3 words (the first at once), finish, [DONE]
	want := []time.Duration{100 * time.Millisecond, 0, 20 * time.Millisecond, 20 * time.Millisecond, 0, 0}
	if got := w.all(); !equalDurations(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCompletionsStream(t *testing.T) {
	s := startSim(t, one(Azure, nil))
	ep := s.Deployments()[0]
	client := newClient(ep)
	stream := client.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model:     openai.CompletionNewParamsModel(ep.Deployment),
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once")},
		MaxTokens: openai.Int(3),
	})
	var text strings.Builder
	finish := ""
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			text.WriteString(c.Text)
			if c.FinishReason != "" {
				finish = string(c.FinishReason)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(strings.Fields(text.String())) != 3 || finish != "length" {
		t.Errorf("text %q finish %q, want 3 words and length", text.String(), finish)
	}
}

// TestAzureStreamSendsFilterResultsAtOnce: an Azure stream's first event,
// the prompt's filter results, goes out at once, as Azure sends it; the
// model's first chunk comes after the first-token latency.
func TestAzureStreamSendsFilterResultsAtOnce(t *testing.T) {
	w := &recordWaiter{}
	cfg := one(Azure, func(d *Deployment) {
		d.Deployment, d.Key = "m1", testKey
		d.Latency = Latency{Median: 400 * time.Millisecond, FirstToken: 100 * time.Millisecond, PerToken: 20 * time.Millisecond}
	})
	s := startSim(t, cfg, WithWaiter(w))
	url, body, hdr := apiRequest(s.Deployments()[0], true)
	resp, b := do(t, http.MethodPost, url, body, hdr)
	first, _, _ := strings.Cut(string(b), "\n\n")
	if resp.StatusCode != 200 || !strings.Contains(first, `"choices":[]`) || !strings.Contains(first, "prompt_filter_results") {
		t.Fatalf("status %d, first event %.200s", resp.StatusCode, first)
	}
	// filter results at once, role chunk after first_token, 3 words (the
	// first at once), finish, [DONE]
	want := []time.Duration{0, 100 * time.Millisecond, 0, 20 * time.Millisecond, 20 * time.Millisecond, 0, 0}
	if got := w.all(); !equalDurations(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
}

// darkeningWaiter waits for nothing, and when asked to wait first (the
// first-token latency) sets its deployment's fault to blackhole: the
// region goes dark while the stream waits for its first chunk.
type darkeningWaiter struct {
	first  time.Duration
	s      *Sim
	once   sync.Once
	darked chan struct{}
}

func (w *darkeningWaiter) Wait(ctx context.Context, d time.Duration) error {
	err := ctx.Err() // before the test, told the region is dark, gives up
	if d == w.first {
		w.once.Do(func() {
			if err := w.s.SetFault("d1", Fault{Mode: FaultBlackhole}); err != nil {
				panic(err)
			}
			close(w.darked)
		})
	}
	return err
}

// TestBlackholeSilencesAStreamUnderWay: a region that goes dark while an
// Azure stream waits for its first chunk sends nothing more: the stream's
// only event is its prompt_filter_results, and it ends as a cut when the
// client gives up, counted as an error (it used to run to its end).
func TestBlackholeSilencesAStreamUnderWay(t *testing.T) {
	w := &darkeningWaiter{first: 100 * time.Millisecond, darked: make(chan struct{})}
	cfg := one(Azure, func(d *Deployment) {
		d.Deployment, d.Key = "m1", testKey
		d.Latency = Latency{Median: 400 * time.Millisecond, FirstToken: w.first}
	})
	s := startSim(t, cfg, WithWaiter(w))
	w.s = s
	ep := s.Deployments()[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, body, hdr := apiRequest(ep, true)
	resp := post(t, ctx, url, body, hdr)
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(first, "prompt_filter_results") {
		t.Fatalf("first line %q: %v", first, err)
	}
	<-w.darked
	cancel() // the client gives up
	eventually(t, "the dark stream to end", func() bool { return s.Stats()["d1"].InFlight == 0 })
	if st := s.Stats()["d1"]; st.Errors != 1 || st.Answered != 0 || st.Abandoned != 0 {
		t.Errorf("stats = %+v, want 1 error: the stream went silent", st)
	}
}

// TestOmitUsage: with reply.omit_usage a stream has no usage chunk even
// when asked, and a plain answer says "usage": null.
func TestOmitUsage(t *testing.T) {
	s := startSim(t, one(Azure, func(d *Deployment) { d.Reply.OmitUsage = true }))
	ep := s.Deployments()[0]
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`
	resp, err := noKeepAlive.Post(chatPath(ep), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := sseEvents(t, resp)
	// prompt filter, role, 2 words, finish, [DONE]: no usage chunk
	if len(evs) != 6 || evs[5] != "[DONE]" {
		t.Fatalf("%d events; want 6 ending in [DONE]:\n%s", len(evs), strings.Join(evs, "\n"))
	}
	for i, e := range evs {
		if strings.Contains(e, `"prompt_tokens"`) {
			t.Errorf("event %d has usage: %s", i, e)
		}
	}
	plain, err := noKeepAlive.Post(chatPath(ep), "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Body.Close()
	var got struct {
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.NewDecoder(plain.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if string(got.Usage) != "null" {
		t.Errorf("plain answer usage = %s, want null", got.Usage)
	}
}
