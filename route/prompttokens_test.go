package route_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/route"
)

// hw is the estimate of "hello world" for o200k_base: 3 tokens (2 by the
// tokenizer; five-letter words average a little over one).
var hw = int64(route.EstimateText(route.EncodingO200k, "hello world"))

// base64Image is a data URL of about 1 MB, as a client sends an image.
var base64Image = "data:image/png;base64," + strings.Repeat("iVBORw0KGgoAAAANSUhEUgAAA+gAAAPoCAYAAABNo9Tk/AAgAElEQVR4", 1<<20/57)

func newRequest(t *testing.T, op route.Operation, body string) *route.Request {
	t.Helper()
	r, err := route.NewRequest(op, []byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPromptTokensCountImagesByTheProvidersRules: a 1 MB base64 image
// was about 250,000 tokens (bytes/4) to admission and the quota router;
// it is the flat cost of a 1024x1024 image by the rule of the encoding
// of the model named, whatever the format, and audio and files their
// flat costs, never their bytes.
func TestPromptTokensCountImagesByTheProvidersRules(t *testing.T) {
	img := base64Image
	tests := []struct {
		name string
		op   route.Operation
		body string
		want int64
	}{
		{"chat, high detail", route.ChatCompletions,
			`{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"hello world"},{"type":"image_url","image_url":{"url":"` + img + `"}}]}]}`,
			hw + route.ItemTokens + route.OpenAIImageTokens},
		{"chat, low detail", route.ChatCompletions,
			`{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + img + `","detail":"low"}}]}]}`,
			route.ItemTokens + route.OpenAILowImageTokens},
		{"chat, a Claude model", route.ChatCompletions,
			`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + img + `"}}]}]}`,
			route.ItemTokens + route.ClaudeImageTokens},
		{"chat, a Gemini model", route.ChatCompletions,
			`{"model":"gemini-2.5-pro","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + img + `"}}]}]}`,
			route.ItemTokens + route.GeminiImageTokens},
		{"messages, a pool's alias: Anthropic's rule", route.Messages,
			`{"model":"chat-prod","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + img[22:] + `"}}]}]}`,
			route.ItemTokens + route.ClaudeImageTokens},
		{"responses", route.Responses,
			`{"model":"gpt-4.1","input":[{"role":"user","content":[{"type":"input_text","text":"hello world"},{"type":"input_image","image_url":"` + img + `"}]}]}`,
			hw + route.ItemTokens + route.OpenAIImageTokens},
		{"audio and a file", route.ChatCompletions,
			`{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"` + img[22:] + `","format":"wav"}},` +
				`{"type":"file","file":{"filename":"a.pdf","file_data":"` + img + `"}}]}]}`,
			route.ItemTokens + route.AudioTokens + route.DocumentTokens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRequest(t, tt.op, tt.body)
			if got := r.PromptTokens(); got != tt.want {
				t.Errorf("PromptTokens = %d, want %d (the body is %d bytes)", got, tt.want, len(tt.body))
			}
		})
	}
}

// TestPromptTokensOfEachPart: what is counted as text (message text,
// system, instructions, tool calls and definitions, embeddings' inputs,
// token ids), and what is not (roles, ids, types, URLs); Claude and
// Gemini models by their documented characters per token.
func TestPromptTokensOfEachPart(t *testing.T) {
	tests := []struct {
		name string
		op   route.Operation
		body string
		want int64
	}{
		{"a message", route.ChatCompletions, `{"model":"gpt-4o","messages":[{"role":"user","content":"hello world"}],"max_tokens":100}`, hw + 4},
		{"no messages", route.ChatCompletions, `{"model":"gpt-4o","messages":[]}`, 0},
		{"ids and URLs are not text", route.ChatCompletions,
			`{"model":"gpt-4o","messages":[{"role":"tool","tool_call_id":"call_abcdefghijklmnopqrstuvwxyz","content":"hi"},` +
				`{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a/very/long/path/to/an/image.png"}}]}]}`,
			1 + 4 + 4 + route.OpenAIImageTokens},
		{"Anthropic system and messages", route.Messages,
			`{"model":"claude-haiku-4-5","max_tokens":5,"system":"1234567","messages":[{"role":"user","content":[{"type":"text","text":"1234567"}]},` +
				`{"role":"assistant","content":[{"type":"thinking","thinking":"not counted again","signature":"x"},{"type":"text","text":"1234567"}]}]}`,
			2 + 2 + 4 + 2 + 4}, // 7 characters at Claude's 3.5 a token
		{"a Gemini model", route.ChatCompletions,
			`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"12345678 é"}]}`,
			3 + 4}, // 10 characters at Gemini's 4 a token
		{"embeddings' strings", route.Embeddings, `{"model":"text-embedding-3-small","input":["hello world","hi"]}`, hw + 1},
		{"embeddings' token ids", route.Embeddings, `{"model":"text-embedding-3-small","input":[[1,2,3],[4,5]]}`, 5},
		{"Responses instructions and input", route.Responses, `{"model":"gpt-4.1","instructions":"hello world","input":"hi"}`, hw + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newRequest(t, tt.op, tt.body).PromptTokens(); got != tt.want {
				t.Errorf("PromptTokens = %d, want %d", got, tt.want)
			}
		})
	}
	// Long text without spaces is text; base64 with escaped slashes,
	// under a key not known for data, is not.
	zh := strings.Repeat("网关接收每一个请求，选择最快的区域。", 100)
	r := newRequest(t, route.ChatCompletions, `{"model":"gpt-4o","messages":[{"role":"user","content":"`+zh+`"}]}`)
	if want := int64(route.EstimateText(route.EncodingO200k, zh)) + 4; r.PromptTokens() != want || want < 1000 {
		t.Errorf("%d bytes of Chinese: %d tokens, want %d", len(zh), r.PromptTokens(), want)
	}
	data := strings.ReplaceAll(base64Image[len("data:image/png;base64,"):], "/", `\/`)
	r = newRequest(t, route.Messages, `{"model":"claude-sonnet-4-5","max_tokens":1,"messages":[{"role":"user","content":[`+
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+data+`"}},{"type":"text","text":"data:image\/png;base64,`+data+`"}]}]}`)
	if got := r.PromptTokens(); got != 4+route.ClaudeImageTokens {
		t.Errorf("base64 with escaped slashes: %d tokens, want %d", got, 4+route.ClaudeImageTokens)
	}
	tools := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`
	if got := newRequest(t, route.ChatCompletions, tools).PromptTokens(); got < 25 || got > 60 {
		t.Errorf("a tool definition: %d tokens, want its JSON counted (25 to 60)", got)
	}
}

// TestTokensAreThePromptAndMaxTokens: Tokens, what admission and the
// quota router reserve, is the prompt estimate plus max_tokens.
func TestTokensAreThePromptAndMaxTokens(t *testing.T) {
	r := newRequest(t, route.ChatCompletions, `{"model":"gpt-4o","messages":[{"role":"user","content":"hello world"}],"max_completion_tokens":100}`)
	if p := hw + 4; r.Tokens() != p+100 || r.PromptTokens() != p || r.MaxOutputTokens() != 100 || r.EstimatedTokens() != int(p+100) {
		t.Errorf("Tokens %d, PromptTokens %d, MaxOutputTokens %d, EstimatedTokens %d; want %d, %d, 100, %[5]d", r.Tokens(), r.PromptTokens(), r.MaxOutputTokens(), r.EstimatedTokens(), p+100, p)
	}
	m := route.Request{Op: route.AudioTranscriptions, ContentType: "multipart/form-data; boundary=x", Body: []byte(strings.Repeat("x", 1<<20))}
	if got := m.Tokens(); got != route.AudioTokens {
		t.Errorf("a multipart audio file of 1 MB: %d tokens, want %d", got, route.AudioTokens)
	}
}

// TestPromptTokensAllocateNothing: the estimate is made on every request
// with a key or a quota, so it must cost no allocation.
func TestPromptTokensAllocateNothing(t *testing.T) {
	body := []byte(`{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"system","content":"You are \"helpful\".\nBe brief."},` +
		`{"role":"user","content":[{"type":"text","text":"Describe this image: été 中文 \u00e9"},{"type":"image_url","image_url":{"url":"` + base64Image[:4096] + `"}}]}]}`)
	allocs := testing.AllocsPerRun(100, func() {
		r := route.Request{Op: route.ChatCompletions, Body: body, Model: "gpt-4o"}
		r.PromptTokens()
	})
	if allocs != 0 {
		t.Errorf("%.0f allocations an estimate, want 0", allocs)
	}
}

// TestImageRequestFitsATokenLimit: a 429 from a backend whose whole
// per-minute limit is 30,000 tokens was taken, for a request with a 1 MB
// image (about 250,000 tokens by bytes/4), as one that can never fit
// there (request_exceeds_limit); it is an ordinary rate limit, and the
// quota router reserves what the image costs, not its bytes.
func TestImageRequestFitsATokenLimit(t *testing.T) {
	body := `{"model":"chat-prod","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},` +
		`{"type":"image_url","image_url":{"url":"` + base64Image + `"}}]}]}`
	limited := status(429, "X-Ratelimit-Limit-Tokens", "30000", "X-Ratelimit-Remaining-Tokens", "0", "Retry-After", "20")
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{limited}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	resp, rep, _ := e.do(t, body)
	if resp.StatusCode != http.StatusOK || len(rep.Attempts) != 2 {
		t.Fatalf("status %d, attempts %+v", resp.StatusCode, rep.Attempts)
	}
	if a := rep.Attempts[0]; a.Reason != route.ReasonRateLimited {
		t.Errorf("weu's 429: reason %q (%s), want %q", a.Reason, a.Message, route.ReasonRateLimited)
	}

	var q route.LocalQuota
	q.Observe(qt0, qt0, 200, http.Header{"X-Ratelimit-Remaining-Tokens": {"2000"}, "X-Ratelimit-Limit-Tokens": {"30000"}, "X-Ratelimit-Reset-Tokens": {"20s"}})
	r := newRequest(t, route.ChatCompletions, body)
	if ok, _ := q.Fits(qt0, r); !ok {
		t.Errorf("a request of %d tokens does not fit in 2,000", r.Tokens())
	}
	q.Observe(qt0, qt0, 200, http.Header{"X-Ratelimit-Remaining-Tokens": {"500"}, "X-Ratelimit-Limit-Tokens": {"30000"}, "X-Ratelimit-Reset-Tokens": {"20s"}})
	if ok, _ := q.Fits(qt0, r); ok {
		t.Errorf("a request of %d tokens fits in 500 (taken for one over the whole limit)", r.Tokens())
	}
}

// BenchmarkPromptTokens: the estimate of a chat request with 4 KB of
// text and a 100 KB image, as admission and the quota router read it.
func BenchmarkPromptTokens(b *testing.B) {
	text := strings.Repeat("We know what we are, but know not what we may be. ", 80)
	body := []byte(`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"` + text + `"},` +
		`{"type":"image_url","image_url":{"url":"` + base64Image[:100<<10] + `"}}]}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := route.Request{Op: route.ChatCompletions, Body: body, Model: "gpt-4o"}
		r.PromptTokens()
	}
}
