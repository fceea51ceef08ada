package route

import "testing"

// TestSaidKeepsAnswerText: the text members of stream events and answers
// are kept, unescaped, whatever the format; other members are not.
func TestSaidKeepsAnswerText(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"openai chat", []string{
			`data: {"id":"x","model":"gpt-4o","choices":[{"delta":{"role":"assistant","content":""}}],"usage":null}`,
			`data: {"choices":[{"delta":{"content":"Hello \"you\"\n"}}]}`,
			`data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"a\":1}"}}]}}]}`,
		}, "Hello \"you\"\n{\"a\":1}"},
		{"anthropic", []string{
			`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi there"}}`,
		}, "Hi there"},
		{"responses", []string{`data: {"type":"response.output_text.delta","delta": "ok"}`}, "ok"},
		{"plain answer", []string{`{"choices":[{"message":{"role":"assistant","content" : "héllo"}}],"usage":null}`}, "héllo"},
		{"no text", []string{`data: {"type":"ping"}`, `data: [DONE]`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s said
			for _, l := range tt.lines {
				s.add([]byte(l))
			}
			if got := s.text(); got != tt.want {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSaidIsBounded: past maxSaid bytes the text is counted, not kept.
func TestSaidIsBounded(t *testing.T) {
	var s said
	big := make([]byte, maxSaid+100)
	for i := range big {
		big[i] = 'a'
	}
	s.keep(big)
	if len(s.b) != maxSaid || s.over != 100 {
		t.Errorf("kept %d, over %d; want %d and 100", len(s.b), s.over, maxSaid)
	}
}
