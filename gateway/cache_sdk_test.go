package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/switchover-gw/switchover/internal/poll"
)

// cacheResult is the x-switchover-cache header of the answer raw points to.
func cacheResult(raw *http.Response) string {
	if raw == nil {
		return ""
	}
	return raw.Header.Get("X-Switchover-Cache")
}

// replayed reports whether result is an answer not made for the call: a
// hit, or (when the call came while the first one was still ending,
// after its client had read the last byte) coalesced.
func replayed(result string) bool { return result == "hit" || result == "coalesced" }

// TestCacheReplaysStreamsTheSDKsRead: a streamed answer, stored once it
// ended whole, is replayed to the next identical streamed call as a
// well-formed stream of the caller's format, which the official SDKs'
// stream readers take to the same content: OpenAI chat chunks ending in
// [DONE], Anthropic's message events (from an Anthropic backend and
// translated from an OpenAI one), the Responses API's events.
func TestCacheReplaysStreamsTheSDKsRead(t *testing.T) {
	t.Run("openai chat", func(t *testing.T) {
		e := startProviders(t, []string{"openai"}, nil, "    cache: {ttl: 10m}\n")
		c := e.openai()
		read := func() (string, string) {
			var raw *http.Response
			s := c.Chat.Completions.NewStreaming(t.Context(), chatParams, option.WithResponseInto(&raw))
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
				t.Fatalf("stream without a finish: %+v", acc)
			}
			return acc.Choices[0].Message.Content, cacheResult(raw)
		}
		first, r1 := read()
		again, r2 := read()
		if r1 != "miss" || !replayed(r2) || first != again || first == "" {
			t.Fatalf("%s %q, then %s %q", r1, first, r2, again)
		}
	})
	for _, backend := range []string{"claude", "openai"} {
		t.Run("anthropic messages from "+backend, func(t *testing.T) {
			e := startProviders(t, []string{backend}, nil, "    cache: {ttl: 10m}\n")
			ac := sdkAnthropic(e.url)
			params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 16,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
			read := func() (string, string) {
				var raw *http.Response
				m := readAnthropicStream(t, ac.Messages.NewStreaming(t.Context(), params, aoption.WithResponseInto(&raw)))
				if len(m.Content) == 0 || m.StopReason == "" {
					t.Fatalf("message without content or stop reason: %+v", m)
				}
				return m.Content[0].Text, cacheResult(raw)
			}
			first, r1 := read()
			again, r2 := read()
			if r1 != "miss" || !replayed(r2) || first != again || first == "" {
				t.Fatalf("%s %q, then %s %q", r1, first, r2, again)
			}
		})
	}
	t.Run("responses", func(t *testing.T) {
		e := startProviders(t, []string{"openai"}, nil, "    cache: {ttl: 10m}\n")
		c := e.openai()
		params := responses.ResponseNewParams{Model: "chat-prod", Store: openai.Bool(false),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}
		read := func() (string, string) {
			var raw *http.Response
			s := c.Responses.NewStreaming(t.Context(), params, option.WithResponseInto(&raw))
			text, completed := "", false
			for s.Next() {
				ev := s.Current()
				switch ev.Type {
				case "response.output_text.delta":
					text += ev.Delta
				case "response.completed":
					completed = true
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if !completed {
				t.Fatal("no response.completed")
			}
			return text, cacheResult(raw)
		}
		first, r1 := read()
		again, r2 := read()
		if r1 != "miss" || !replayed(r2) || first != again || first == "" {
			t.Fatalf("%s %q, then %s %q", r1, first, r2, again)
		}
		// Stored by the provider (store left at its default): never cached.
		var raw *http.Response
		s := c.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{Model: "chat-prod",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}, option.WithResponseInto(&raw))
		for s.Next() {
		}
		if got := cacheResult(raw); got != "" {
			t.Errorf("a stored response: x-switchover-cache %q, want none", got)
		}
	})
}

// TestCacheHitsGeminiCalls: a Gemini client's generateContent and
// streamGenerateContent (alt=sse) are cached in Google's shape: the
// repeat is a hit with the same body.
func TestCacheHitsGeminiCalls(t *testing.T) {
	e := startProviders(t, []string{"gemini"}, nil, "    cache: {ttl: 10m}\n")
	for _, path := range []string{"/v1beta/models/chat-prod:generateContent", "/v1beta/models/chat-prod:streamGenerateContent?alt=sse"} {
		post := func() (*http.Response, string) {
			resp, err := http.Post(e.url+path, "application/json", strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, string(b)
		}
		r1, b1 := post()
		poll.Until(t, 30*time.Second, func() bool { return e.gw.CacheFlights() == 0 }, func() string { return "the flight has not landed" })
		r2, b2 := post()
		if r1.StatusCode != 200 || r1.Header.Get("X-Switchover-Cache") != "miss" || r2.Header.Get("X-Switchover-Cache") != "hit" || b1 != b2 {
			t.Fatalf("%s: %d %q then %d %q\n%s\n%s", path, r1.StatusCode, r1.Header.Get("X-Switchover-Cache"), r2.StatusCode, r2.Header.Get("X-Switchover-Cache"), b1, b2)
		}
	}
}

// cacheHeaders is a transport that keeps the x-switchover-cache header of
// every answer, in order.
type cacheHeaders struct {
	mu   sync.Mutex
	seen []string
}

func (c *cacheHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		c.seen = append(c.seen, resp.Header.Get("X-Switchover-Cache"))
		c.mu.Unlock()
	}
	return resp, err
}

func (c *cacheHeaders) results() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// TestCacheReplaysGeminiStreamsTheSDKReads: Google's SDK reads a replayed
// streamGenerateContent to the same text, finish reason and usage as the
// stream it replays, from a Gemini member (passed through) and from an
// Azure one (translated into Gemini's events).
func TestCacheReplaysGeminiStreamsTheSDKReads(t *testing.T) {
	for _, member := range []string{"gemini", "aoai-weu"} {
		t.Run(member, func(t *testing.T) {
			e := startProviders(t, []string{member}, nil, "    cache: {ttl: 10m}\n")
			rec := &cacheHeaders{}
			c, err := genai.NewClient(t.Context(), &genai.ClientConfig{Backend: genai.BackendGeminiAPI, APIKey: "unused",
				HTTPOptions: genai.HTTPOptions{BaseURL: e.url}, HTTPClient: &http.Client{Transport: rec}})
			if err != nil {
				t.Fatal(err)
			}
			type read struct {
				text, finish string
				chunks       int
				total        int32
			}
			stream := func() read {
				var got read
				var text strings.Builder
				for r, err := range c.Models.GenerateContentStream(t.Context(), "chat-prod", genai.Text("Tell a story"), nil) {
					if err != nil {
						t.Fatalf("stream: %v", err)
					}
					got.chunks++
					text.WriteString(r.Text())
					if len(r.Candidates) > 0 && r.Candidates[0].FinishReason != "" {
						got.finish = string(r.Candidates[0].FinishReason)
					}
					if r.UsageMetadata != nil {
						got.total = r.UsageMetadata.TotalTokenCount
					}
				}
				got.text = text.String()
				return got
			}
			first := stream()
			poll.Until(t, 30*time.Second, func() bool { return e.gw.CacheFlights() == 0 }, func() string { return "the flight has not landed" })
			second := stream()
			res := rec.results()
			if len(res) != 2 || res[0] != "miss" || !replayed(res[1]) {
				t.Fatalf("x-switchover-cache of the two streams: %q, want miss then a replay", res)
			}
			if first.chunks < 2 || first.text == "" || first.finish != string(genai.FinishReasonStop) || first.total == 0 {
				t.Fatalf("the first stream as the SDK read it: %+v", first)
			}
			if second != first {
				t.Fatalf("the replay as the SDK read it:\n%+v\nthe first:\n%+v", second, first)
			}
		})
	}
}
