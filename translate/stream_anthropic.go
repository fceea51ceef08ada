package translate

import (
	"encoding/json"
	"fmt"
)

// NewAnthropicToOpenAIStream converts an Anthropic Messages stream to OpenAI
// chat.completion.chunk events. The first chunk carries the role; text
// deltas become content, a tool_use block becomes a tool call whose first
// delta holds its index, id and name, followed by the input_json_delta
// fragments as arguments; message_delta's stop_reason becomes the
// finish_reason. Thinking text (thinking_delta, or a thinking block that
// starts with text) becomes the delta's non-standard reasoning_content, as
// in AnthropicResponseToOpenAI; signatures and redacted_thinking are left
// out. With includeUsage a last chunk with empty choices and the usage
// follows, before the closing "data: [DONE]" that End writes. Ping and
// unknown events produce nothing; an error event becomes an OpenAI error
// chunk and a *StreamError.
//
// The returned converter is not safe for concurrent use.
func NewAnthropicToOpenAIStream(includeUsage bool) StreamConverter {
	return &anthropicToOpenAI{includeUsage: includeUsage, toolIndex: map[int]int{}}
}

type anthropicToOpenAI struct {
	includeUsage bool
	w            chunkWriter
	started      bool
	usage        anUsage
	toolIndex    map[int]int // content block index -> tool call index
	tools        int
	finished     bool // a stop_reason arrived
	usageSent    bool
}

var _ StreamConverter = (*anthropicToOpenAI)(nil)
var _ completer = (*anthropicToOpenAI)(nil)

func (s *anthropicToOpenAI) Event(ev Event) ([]byte, error) {
	var e anStreamEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return nil, errBadBody(fmt.Sprintf("anthropic stream event %q", ev.Name), err)
	}
	if e.Type == "" {
		e.Type = ev.Name
	}
	switch e.Type {
	case "message_start":
		if e.Message == nil {
			return nil, errBadBody("anthropic stream", fmt.Errorf("message_start without message"))
		}
		s.w = chunkWriter{id: "chatcmpl-" + e.Message.ID, model: e.Message.Model}
		s.usage = e.Message.Usage
		return s.start(), nil
	case "content_block_start":
		if e.Index == nil || e.ContentBlock == nil {
			return nil, nil
		}
		out := s.start()
		switch e.ContentBlock.Type {
		case "text":
			if t := e.ContentBlock.Text; t != nil && *t != "" {
				out = append(out, s.delta(oaDelta{Content: t})...)
			}
		case "thinking":
			if t := e.ContentBlock.Thinking; t != nil && *t != "" {
				out = append(out, s.reasoning(*t)...)
			}
		case "tool_use":
			k := s.tools
			s.tools++
			s.toolIndex[*e.Index] = k
			var tc oaToolCall
			tc.Index, tc.ID, tc.Type = &k, e.ContentBlock.ID, "function"
			tc.Function.Name = e.ContentBlock.Name
			if in := compactJSON(e.ContentBlock.Input); !isNull(in) && string(in) != "{}" {
				tc.Function.Arguments = string(in)
			}
			out = append(out, s.delta(oaDelta{ToolCalls: []oaToolCall{tc}})...)
		}
		return out, nil
	case "content_block_delta":
		if e.Index == nil {
			return nil, nil
		}
		var d anBlockDelta
		if err := json.Unmarshal(e.Delta, &d); err != nil {
			return nil, errBadBody("anthropic stream: content_block_delta", err)
		}
		switch d.Type {
		case "text_delta":
			if d.Text == "" {
				return nil, nil
			}
			return append(s.start(), s.delta(oaDelta{Content: &d.Text})...), nil
		case "thinking_delta":
			if d.Thinking == "" {
				return nil, nil
			}
			return append(s.start(), s.reasoning(d.Thinking)...), nil
		case "input_json_delta":
			k, ok := s.toolIndex[*e.Index]
			if !ok || d.PartialJSON == "" {
				return nil, nil
			}
			var tc oaToolCall
			tc.Index = &k
			tc.Function.Arguments = d.PartialJSON
			return s.delta(oaDelta{ToolCalls: []oaToolCall{tc}}), nil
		}
		return nil, nil // signature and citation deltas
	case "message_delta":
		var d anMessageDelta
		if len(e.Delta) > 0 {
			if err := json.Unmarshal(e.Delta, &d); err != nil {
				return nil, errBadBody("anthropic stream: message_delta", err)
			}
		}
		if u := e.Usage; u != nil {
			s.usage.OutputTokens = u.OutputTokens
			if u.InputTokens != nil {
				s.usage.InputTokens = *u.InputTokens
			}
			if u.CacheCreationInputTokens != nil {
				s.usage.CacheCreationInputTokens = *u.CacheCreationInputTokens
			}
			if u.CacheReadInputTokens != nil {
				s.usage.CacheReadInputTokens = *u.CacheReadInputTokens
			}
			if u.OutputTokensDetails != nil {
				s.usage.OutputTokensDetails = u.OutputTokensDetails
			}
		}
		if d.StopReason == nil {
			return nil, nil
		}
		s.finished = true
		finish := anStopToOpenAI(*d.StopReason)
		out := s.start()
		return append(out, s.w.event([]oaChunkChoice{{Delta: oaDelta{}, FinishReason: &finish}}, nil)...), nil
	case "message_stop":
		s.finished = true
		return s.usageChunk(), nil
	case "error":
		return streamError(Anthropic, ev.Data, ErrorToOpenAI(Anthropic, 0, ev.Data), sseData)
	}
	return nil, nil // ping and events added later
}

// start writes the role chunk before the first content.
func (s *anthropicToOpenAI) start() []byte {
	if s.started {
		return nil
	}
	s.started = true
	return s.w.event([]oaChunkChoice{{Delta: oaDelta{Role: "assistant", Content: strPtr("")}}}, nil)
}

func (s *anthropicToOpenAI) delta(d oaDelta) []byte {
	return s.w.event([]oaChunkChoice{{Delta: d}}, nil)
}

// reasoning writes a chunk whose delta is {"reasoning_content": text}.
func (s *anthropicToOpenAI) reasoning(text string) []byte {
	type delta struct {
		ReasoningContent string `json:"reasoning_content"`
	}
	type choice struct {
		Index        int             `json:"index"`
		Delta        delta           `json:"delta"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	}
	c := struct {
		oaChunk
		Choices []choice `json:"choices"`
	}{
		oaChunk: oaChunk{ID: s.w.id, Object: "chat.completion.chunk", Model: s.w.model},
		Choices: []choice{{Delta: delta{ReasoningContent: text}, Logprobs: jsonNull}},
	}
	return sseData(mustMarshal(c))
}

func (s *anthropicToOpenAI) usageChunk() []byte {
	if !s.includeUsage || s.usageSent {
		return nil
	}
	s.usageSent = true
	return s.w.event(nil, s.usage.toOpenAI())
}

func (s *anthropicToOpenAI) End() []byte {
	return append(s.usageChunk(), sseDone...)
}

func (s *anthropicToOpenAI) complete() bool { return s.finished }

// streamError answers an error event of a source stream: the event
// converted to the output format, framed, and a *StreamError.
func streamError(from Format, data, converted []byte, frame func([]byte) []byte) ([]byte, error) {
	e := parseError(from, data)
	msg := e.message
	if !e.ok {
		msg = string(data)
	}
	return frame(converted), &StreamError{From: from, Code: ErrorCode(from, data), Message: msg, Data: data}
}
