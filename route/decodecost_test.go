package route

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

// allocated is the bytes f allocates (runtime.MemStats.TotalAlloc, the
// whole process's: other goroutines' allocations only make it larger).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// jsonList is a JSON object {"model":"m", key: [item × n]} with extra
// members after it.
func jsonList(key, item string, n int, extra string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m",` + extra + `"` + key + `":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// TestDecodeMemoryBoundsTranslation: what translating a request allocates
// (its OpenAI chat form and the target's body, one attempt's worth) stays
// within Request.DecodeMemory, the figure a gateway charges for it, on
// the costliest shapes: many tiny messages, input items, content parts
// and tools, and long text. The figures are printed.
func TestDecodeMemoryBoundsTranslation(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation figures differ under the race detector")
	}
	anthropic := &Member{Backend: &Backend{Name: "an", Provider: &Anthropic{}}}
	gemini := &Member{Backend: &Backend{Name: "ge", Provider: &Gemini{}}}
	openai := &Member{Backend: &Backend{Name: "oa", Provider: &OpenAI{}}}
	const n = 10_000
	schema := `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"array","items":{"type":"string","enum":["x","y"]}}}}}}`
	tests := []struct {
		name string
		op   Operation
		body []byte
		to   *Member
	}{
		{"tiny chat messages to Anthropic", ChatCompletions, jsonList("messages", `{"role":"user","content":"hi"}`, n, ""), anthropic},
		{"alternating chat messages to Anthropic", ChatCompletions, jsonList("messages", `{"role":"user","content":"hi"},{"role":"assistant","content":"ok"}`, n/2, ""), anthropic},
		{"tiny chat messages to Gemini", ChatCompletions, jsonList("messages", `{"role":"user","content":"hi"}`, n, ""), gemini},
		{"content parts to Anthropic", ChatCompletions, jsonList("messages", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"c"}]}`, n/3, ""), anthropic},
		{"content parts to Gemini", ChatCompletions, jsonList("messages", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"c"}]}`, n/3, ""), gemini},
		{"tool calls to Anthropic", ChatCompletions, jsonList("messages", `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}`, n/4, ""), anthropic},
		{"tools to Gemini", ChatCompletions, jsonList("tools", `{"type":"function","function":{"name":"f","parameters":`+schema+`}}`, MaxJSONTools/2, `"messages":[{"role":"user","content":"hi"}],`), gemini},
		{"tools to Anthropic", ChatCompletions, jsonList("tools", `{"type":"function","function":{"name":"f","parameters":`+schema+`}}`, MaxJSONTools/2, `"messages":[{"role":"user","content":"hi"}],`), anthropic},
		{"a large image to Anthropic", ChatCompletions, jsonList("messages", `{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,`+strings.Repeat("iVBO", 1_000_000)+`"}}]}`, 1, ""), anthropic},
		{"a large image to Gemini", ChatCompletions, jsonList("messages", `{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,`+strings.Repeat("iVBO", 1_000_000)+`"}}]}`, 1, ""), gemini},
		{"long text to Anthropic", ChatCompletions, jsonList("messages", `{"role":"user","content":"`+strings.Repeat("lorem ipsum ", 100_000)+`"}`, 3, ""), anthropic},
		{"tiny input items to Anthropic", Responses, jsonList("input", `{"role":"user","content":"hi"}`, n, ""), anthropic},
		{"tiny input items to Gemini", Responses, jsonList("input", `{"role":"user","content":"hi"}`, n, ""), gemini},
		{"input content parts to Anthropic", Responses, jsonList("input", `{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}`, n/2, ""), anthropic},
		{"function call items to Anthropic", Responses, jsonList("input", `{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}`, n/2, ""), anthropic},
		{"tiny messages to OpenAI", Messages, jsonList("messages", `{"role":"user","content":"hi"}`, n, `"max_tokens":5,`), openai},
		{"message blocks to OpenAI", Messages, jsonList("messages", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, n/2, `"max_tokens":5,`), openai},
		{"tiny messages to Gemini", Messages, jsonList("messages", `{"role":"user","content":"hi"}`, n, `"max_tokens":5,`), gemini},
	}
	worst := 0.0
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRequest(tc.op, tc.body, nil)
			if err != nil {
				t.Fatal(err)
			}
			var perr error
			runtime.GC()
			got := allocated(func() { _, perr = prepare(r, tc.to) })
			if perr != nil {
				t.Fatal(perr)
			}
			charge := r.DecodeMemory()
			ratio := float64(got) / float64(charge)
			worst = max(worst, ratio)
			fmt.Printf("%-40s body %7d B, %6d values: translation allocated %6.1f MB (%5.1fx the body, %4.0f B a value); charged %6.1f MB (%.2f of it used)\n",
				tc.name, len(tc.body), r.values, float64(got)/1e6, float64(got)/float64(len(tc.body)), float64(got)/float64(r.values), float64(charge)/1e6, ratio)
			if int64(got) > charge {
				t.Errorf("translating allocated %d bytes, over the %d DecodeMemory charges", got, charge)
			}
		})
	}
	fmt.Printf("the costliest shape used %.2f of its charge\n", worst)
}

// TestDecodeMemoryBoundsTokenEstimate: counting tokens in the gateway
// (count_tokens for a pool without an Anthropic member) decodes the
// whole body too, within what DecodeMemory charges.
func TestDecodeMemoryBoundsTokenEstimate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation figures differ under the race detector")
	}
	for _, item := range []string{`{"role":"user","content":"hi"}`, `{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]}`} {
		r, err := NewRequest(CountTokens, jsonList("messages", item, 10_000, ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		got := allocated(func() { translate.EstimateAnthropicTokens(r.Body) })
		fmt.Printf("count_tokens estimate: body %d B, allocated %.1f MB, charged %.1f MB\n", len(r.Body), float64(got)/1e6, float64(r.DecodeMemory())/1e6)
		if int64(got) > r.DecodeMemory() {
			t.Errorf("estimating tokens allocated %d bytes, over the %d DecodeMemory charges", got, r.DecodeMemory())
		}
	}
}

// TestPoolTranslates: a call costs its decoding where a member of the
// pool, or of a pool it may fall back to, takes it in another format.
func TestPoolTranslates(t *testing.T) {
	pool := func(name string, provs ...Provider) *Pool {
		p := &Pool{Name: name}
		for i, prov := range provs {
			p.Members = append(p.Members, &Member{Backend: &Backend{Name: fmt.Sprint(name, i), Provider: prov}})
		}
		return p
	}
	openai, claude := pool("openai", &OpenAI{}, &Azure{}), pool("claude", &Anthropic{})
	withFallback := pool("fb", &OpenAI{})
	withFallback.Fallback = claude
	withContext := pool("ctx", &OpenAI{})
	withContext.ContextFallback = claude
	loop := pool("loop", &OpenAI{})
	loop.Fallback = loop
	tests := []struct {
		name string
		p    *Pool
		op   Operation
		want bool
	}{
		{"chat to OpenAI members", openai, ChatCompletions, false},
		{"chat to an Anthropic member", claude, ChatCompletions, true},
		{"messages to an Anthropic member", claude, Messages, false},
		{"messages to OpenAI members", openai, Messages, true},
		{"responses to OpenAI members", pool("oa", &OpenAI{}), Responses, false},
		{"embeddings are never translated", claude, Embeddings, false},
		{"chat with an Anthropic fallback", withFallback, ChatCompletions, true},
		{"chat with an Anthropic context fallback", withContext, ChatCompletions, true},
		{"a fallback loop", loop, ChatCompletions, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRequest(tc.op, []byte(`{"model":"m","messages":[],"input":"x"}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.p.Translates(r); got != tc.want {
				t.Fatalf("Translates = %v, want %v", got, tc.want)
			}
		})
	}
}
