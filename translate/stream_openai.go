package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// NewOpenAIToAnthropicStream converts an OpenAI chat.completion.chunk stream
// (with its closing "data: [DONE]") to the Anthropic Messages event sequence:
// message_start, then for each run of text or each tool call a
// content_block_start, its content_block_delta events (text_delta,
// input_json_delta) and content_block_stop, with block indexes counting from
// 0, then message_delta with the stop_reason and usage, and message_stop.
// Only the first choice is converted. Usage arrives at the end of an OpenAI
// stream (stream_options.include_usage), so message_start reports 0 tokens
// and message_delta the totals, input tokens included. An error chunk becomes
// an Anthropic error event and a *StreamError.
//
// The returned converter is not safe for concurrent use.
func NewOpenAIToAnthropicStream() StreamConverter {
	return &openAIToAnthropic{toolBlock: map[int]int{}, open: -1, openTool: -1}
}

type openAIToAnthropic struct {
	started   bool
	open      int // index of the open content block, -1 if none
	openTool  int // OpenAI tool index of the open block, -1 for text
	blocks    int // content blocks started
	toolBlock map[int]int
	finish    string // OpenAI finish_reason, once seen
	usage     *oaUsage
	done      bool // message_stop written
}

var _ StreamConverter = (*openAIToAnthropic)(nil)
var _ completer = (*openAIToAnthropic)(nil)

// oaStreamChunk is a chunk as read, which may instead be an error.
type oaStreamChunk struct {
	oaChunk
	Error json.RawMessage `json:"error"`
}

func (s *openAIToAnthropic) Event(ev Event) ([]byte, error) {
	if s.done {
		return nil, nil
	}
	if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
		return s.close(), nil
	}
	var c oaStreamChunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return nil, errBadBody("openai stream chunk", err)
	}
	if !isNull(c.Error) {
		framed := func(b []byte) []byte { return sseNamed("error", b) }
		return streamError(OpenAI, ev.Data, ErrorToAnthropic(OpenAI, 0, ev.Data), framed)
	}
	if len(c.Choices) == 0 && c.Usage == nil {
		// e.g. Azure's first chunk, with prompt_filter_results and no id
		// or model yet: nothing to say, and too early for message_start.
		return nil, nil
	}
	out := s.start(c.ID, c.Model)
	if c.Usage != nil {
		s.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		for _, text := range []*string{ch.Delta.Content, ch.Delta.Refusal} {
			if text == nil || *text == "" {
				continue
			}
			if s.open < 0 || s.openTool >= 0 {
				out = append(out, s.stopBlock()...)
				out = append(out, s.startBlock(textBlock(""), -1)...)
			}
			out = append(out, s.blockDelta(anBlockDelta{Type: "text_delta", Text: *text})...)
		}
		for _, tc := range ch.Delta.ToolCalls {
			k := 0
			if tc.Index != nil {
				k = *tc.Index
			}
			if _, seen := s.toolBlock[k]; !seen {
				out = append(out, s.stopBlock()...)
				block := anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage("{}")}
				out = append(out, s.startBlock(block, k)...)
			} else if s.openTool != k {
				return out, errBadBody("openai stream", fmt.Errorf("tool call %d resumed after another began", k))
			}
			if tc.Function.Arguments != "" {
				out = append(out, s.blockDelta(anBlockDelta{Type: "input_json_delta", PartialJSON: tc.Function.Arguments})...)
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish = *ch.FinishReason
			out = append(out, s.stopBlock()...)
		}
	}
	return out, nil
}

func (s *openAIToAnthropic) start(id, model string) []byte {
	if s.started {
		return nil
	}
	s.started = true
	msg := anResponse{
		ID:      anthropicMessageID(id),
		Type:    "message",
		Role:    "assistant",
		Model:   model,
		Content: []anBlock{},
	}
	return anEvent(anStreamEvent{Type: "message_start", Message: &msg})
}

func (s *openAIToAnthropic) startBlock(b anBlock, tool int) []byte {
	s.open, s.openTool = s.blocks, tool
	s.blocks++
	if tool >= 0 {
		s.toolBlock[tool] = s.open
	}
	i := s.open
	return anEvent(anStreamEvent{Type: "content_block_start", Index: &i, ContentBlock: &b})
}

func (s *openAIToAnthropic) blockDelta(d anBlockDelta) []byte {
	i := s.open
	return anEvent(anStreamEvent{Type: "content_block_delta", Index: &i, Delta: mustMarshal(d)})
}

func (s *openAIToAnthropic) stopBlock() []byte {
	if s.open < 0 {
		return nil
	}
	i := s.open
	s.open, s.openTool = -1, -1
	return anEvent(anStreamEvent{Type: "content_block_stop", Index: &i})
}

// close ends the message: message_delta with the stop reason and usage,
// then message_stop.
func (s *openAIToAnthropic) close() []byte {
	if s.done {
		return nil
	}
	s.done = true
	out := s.start("", "")
	out = append(out, s.stopBlock()...)
	stop := openAIFinishToAnthropic(s.finish)
	if stop == "end_turn" && len(s.toolBlock) > 0 {
		stop = "tool_use" // as in OpenAIResponseToAnthropic
	}
	u := anUsageFromOpenAI(s.usage)
	du := &anDeltaUsage{OutputTokens: u.OutputTokens}
	if s.usage != nil {
		du.InputTokens = &u.InputTokens
		if u.CacheReadInputTokens > 0 {
			du.CacheReadInputTokens = &u.CacheReadInputTokens
		}
	}
	delta := mustMarshal(anMessageDelta{StopReason: &stop})
	out = append(out, anEvent(anStreamEvent{Type: "message_delta", Delta: delta, Usage: du})...)
	return append(out, anEvent(anStreamEvent{Type: "message_stop"})...)
}

// End closes a stream whose source ended without "[DONE]" after its
// finish_reason.
func (s *openAIToAnthropic) End() []byte { return s.close() }

func (s *openAIToAnthropic) complete() bool { return s.done || s.finish != "" }

func anEvent(e anStreamEvent) []byte {
	return sseNamed(e.Type, mustMarshal(e))
}
