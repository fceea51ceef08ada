package translate

import (
	"errors"
	"testing"
)

func TestForOpenAI(t *testing.T) {
	both := OpenAIOptions{TopK: true, Reasoning: true}
	for _, tc := range []struct {
		name string
		opt  OpenAIOptions
		in   string
		want string // "" means: the same slice back
	}{
		{"nothing applies", OpenAIOptions{}, `{"model":"m",` + hi + `}`, ""},
		{"extensions accepted", both, `{"model":"m",` + hi + `,"top_k":5,"reasoning_effort":"high"}`, ""},
		{"null extensions", OpenAIOptions{}, `{"model":"m",` + hi + `,"top_k":null,"reasoning_effort":null}`, ""},
		{"reasoning_effort none removed", OpenAIOptions{}, `{"model":"m",` + hi + `,"reasoning_effort":"none"}`, `{"model":"m",` + hi + `}`},
		{"reasoning_content removed from history", both, `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_content":"r"},{"role":"user","content":"<&>"}]}`,
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"<&>"}]}`},
		{"reasoning_content kept elsewhere", both, `{"messages":[{"role":"user","content":"q","reasoning_content":"not the model's"}]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			out, err := ForOpenAI(in, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if &out[0] != &in[0] || len(out) != len(in) {
					t.Errorf("got a new body %s, want canon unchanged", out)
				}
				return
			}
			assertJSON(t, out, tc.want)
			if string(out) == tc.in {
				t.Errorf("body unchanged")
			}
		})
	}
}

func TestForOpenAIMalformed(t *testing.T) {
	for _, body := range []string{`nope`, `[]`, `{"messages":{"role":"user"}}`, `{"messages":[1]}`} {
		_, err := ForOpenAI([]byte(body), OpenAIOptions{})
		var u *UnsupportedError
		if err == nil || errors.As(err, &u) {
			t.Errorf("%s: err = %v, want a malformed-body error", body, err)
		}
	}
}

// TestForOpenAIAfterInbound runs the path of an Anthropic client with
// extended thinking to a plain OpenAI backend: refused, and accepted by a
// backend that takes reasoning_effort.
func TestForOpenAIAfterInbound(t *testing.T) {
	canon, err := AnthropicRequestToOpenAI(readFile(t, "anth_req_thinking_to_openai.in.json"))
	if err != nil {
		t.Fatal(err)
	}
	var u *UnsupportedError
	if _, err := ForOpenAI(canon, OpenAIOptions{Reasoning: true}); !errors.As(err, &u) || u.Feature != "top_k" {
		t.Errorf("err = %v, want top_k refused", err)
	}
	if _, err := ForOpenAI(canon, OpenAIOptions{TopK: true}); !errors.As(err, &u) || u.Feature != "reasoning_effort" {
		t.Errorf("err = %v, want reasoning_effort refused", err)
	}
	if out, err := ForOpenAI(canon, OpenAIOptions{TopK: true, Reasoning: true}); err != nil || string(out) != string(canon) {
		t.Errorf("err = %v, out %s", err, out)
	}
}
