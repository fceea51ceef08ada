package translate

import (
	"cmp"
	"encoding/json"
)

// NewGeminiToOpenAIStream converts a Gemini streamGenerateContent?alt=sse
// stream to OpenAI chat.completion.chunk events, one choice per candidate.
// model is reported until a chunk names its modelVersion; the id is
// "chatcmpl-" followed by the first responseId, or "chatcmpl-gemini". Text
// parts become content deltas; each functionCall part (Gemini sends them
// whole) becomes one tool_calls delta with id, name and all its arguments.
// A candidate's finishReason becomes a chunk with the mapped finish_reason.
// Gemini repeats its usage in every chunk; with includeUsage, End writes the
// last one as a usage chunk before "data: [DONE]". An error chunk becomes an
// OpenAI error chunk and a *StreamError.
//
// The returned converter is not safe for concurrent use.
func NewGeminiToOpenAIStream(model string, includeUsage bool) StreamConverter {
	return &geminiToOpenAI{model: model, includeUsage: includeUsage, choices: map[int]*gmChoiceState{}}
}

type geminiToOpenAI struct {
	model        string
	includeUsage bool
	w            chunkWriter
	started      bool // id and model fixed
	responseID   string
	usage        *gmUsage
	choices      map[int]*gmChoiceState
	blocked      bool // the prompt was blocked: the response is over
}

type gmChoiceState struct {
	roleSent bool
	calls    int    // tool calls so far
	finish   string // OpenAI finish_reason once the candidate finished
}

var _ StreamConverter = (*geminiToOpenAI)(nil)
var _ completer = (*geminiToOpenAI)(nil)

func (s *geminiToOpenAI) Event(ev Event) ([]byte, error) {
	var r gmResponse
	if err := json.Unmarshal(ev.Data, &r); err != nil {
		return nil, errBadBody("gemini stream event", err)
	}
	if !isNull(r.Error) {
		return streamError(Gemini, ev.Data, ErrorToOpenAI(Gemini, 0, ev.Data), sseData)
	}
	if !s.started {
		s.started = true
		s.responseID = r.ResponseID
		s.w = chunkWriter{id: geminiCompletionID(r.ResponseID), model: cmp.Or(r.ModelVersion, s.model)}
	}
	if r.UsageMetadata != nil {
		s.usage = r.UsageMetadata
	}
	var out []byte
	if len(r.Candidates) == 0 && r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		st := s.choice(0)
		if st.finish == "" {
			s.blocked = true
			st.finish = "content_filter"
			out = append(out, s.chunk(0, oaDelta{}, &st.finish)...)
		}
		return out, nil
	}
	for pos, c := range r.Candidates {
		idx := c.Index
		if idx == 0 {
			idx = pos
		}
		st := s.choice(idx)
		if st.finish != "" {
			continue // Gemini said this candidate was over
		}
		var text string
		var calls []oaToolCall
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				switch {
				case p.Thought:
				case p.FunctionCall != nil:
					tc := geminiToolCall(p.FunctionCall, s.responseID, idx, st.calls)
					k := st.calls
					tc.Index = &k
					st.calls++
					calls = append(calls, tc)
				default:
					text += p.Text
				}
			}
		}
		if text != "" {
			out = append(out, s.chunk(idx, oaDelta{Content: &text}, nil)...)
		}
		for _, tc := range calls {
			out = append(out, s.chunk(idx, oaDelta{ToolCalls: []oaToolCall{tc}}, nil)...)
		}
		if f := gmFinishToOpenAI(c.FinishReason, st.calls > 0); f != "" {
			st.finish = f
			out = append(out, s.chunk(idx, oaDelta{}, &st.finish)...)
		}
	}
	return out, nil
}

func (s *geminiToOpenAI) choice(idx int) *gmChoiceState {
	st, ok := s.choices[idx]
	if !ok {
		st = &gmChoiceState{}
		s.choices[idx] = st
	}
	return st
}

// chunk writes one choice's delta; the first for a choice carries the role.
func (s *geminiToOpenAI) chunk(idx int, d oaDelta, finish *string) []byte {
	st := s.choice(idx)
	if !st.roleSent {
		st.roleSent = true
		d.Role = "assistant"
		if d.Content == nil && len(d.ToolCalls) == 0 {
			d.Content = strPtr("")
		}
	}
	return s.w.event([]oaChunkChoice{{Index: idx, Delta: d, FinishReason: finish}}, nil)
}

func (s *geminiToOpenAI) End() []byte {
	var out []byte
	if s.includeUsage && s.started {
		u := s.usage.toOpenAI()
		if u == nil {
			u = &oaUsage{}
		}
		out = s.w.event(nil, u)
	}
	return append(out, sseDone...)
}

// complete: the prompt was blocked, or every candidate seen has finished.
func (s *geminiToOpenAI) complete() bool {
	if s.blocked {
		return true
	}
	if len(s.choices) == 0 {
		return false
	}
	for _, st := range s.choices {
		if st.finish == "" {
			return false
		}
	}
	return true
}
