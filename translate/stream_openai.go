package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// AnthropicStreamOptions tunes NewOpenAIToAnthropicStreamWith. The zero
// value is ready to use.
type AnthropicStreamOptions struct {
	// InputTokens is the input_tokens message_start reports: an OpenAI
	// stream says its usage only at its end, and Anthropic clients read
	// the input count from message_start (for context accounting before
	// the answer is done). The engine passes an estimate, e.g. from
	// EstimateOpenAITokens or EstimateAnthropicTokens. Default 0. When the
	// source reports usage, the final message_delta carries the real
	// counts, which replace it.
	InputTokens int
}

// NewOpenAIToAnthropicStream is NewOpenAIToAnthropicStreamWith with the zero
// AnthropicStreamOptions.
//
// The returned converter is not safe for concurrent use.
func NewOpenAIToAnthropicStream() StreamConverter {
	return NewOpenAIToAnthropicStreamWith(AnthropicStreamOptions{})
}

// NewOpenAIToAnthropicStreamWith converts an OpenAI chat.completion.chunk
// stream (with its closing "data: [DONE]") to the Anthropic Messages event
// sequence: message_start, then for each run of reasoning, each run of text
// and each tool call a content_block_start, its content_block_delta events
// (thinking_delta, text_delta, input_json_delta) and content_block_stop,
// with block indexes counting from 0, then message_delta with the
// stop_reason and usage, and message_stop. Reasoning is the non-standard
// delta member reasoning_content (DeepSeek, vLLM) or a string reasoning
// (OpenRouter); it becomes a thinking block whose signature is "" and that
// gets no signature_delta (see thinkingBlock). Only the first choice is
// converted. message_start reports opt.InputTokens input tokens and 0
// output tokens; when the source sends usage (stream_options.include_usage)
// message_delta carries the totals as anUsageFromOpenAI maps them, input and
// cache counts included, else only output_tokens 0 (message_start's counts
// stand). An error chunk becomes an Anthropic error event and a
// *StreamError.
//
// The returned converter is not safe for concurrent use.
func NewOpenAIToAnthropicStreamWith(opt AnthropicStreamOptions) StreamConverter {
	return &openAIToAnthropic{opt: opt, toolBlock: map[int]int{}, open: -1, openTool: -1}
}

// Kinds of the open content block.
const (
	blockText = iota
	blockThinking
	blockTool
)

type openAIToAnthropic struct {
	opt       AnthropicStreamOptions
	started   bool
	open      int // index of the open content block, -1 if none
	openKind  int // blockText, blockThinking or blockTool, when open >= 0
	openTool  int // OpenAI tool index of the open block, -1 for text and thinking
	blocks    int // content blocks started
	toolBlock map[int]int
	finish    string // OpenAI finish_reason, once seen
	usage     *oaUsage
	tier      string // service_tier, once seen
	done      bool   // message_stop written
}

var _ StreamConverter = (*openAIToAnthropic)(nil)
var _ completer = (*openAIToAnthropic)(nil)

// oaStreamChunk is a chunk as read, which may instead be an error. Its
// Choices shadow the embedded ones, to read reasoning in the deltas.
type oaStreamChunk struct {
	oaChunk
	Choices     []oaStreamChoice `json:"choices"`
	ServiceTier string           `json:"service_tier"`
	Error       json.RawMessage  `json:"error"`
}

type oaStreamChoice struct {
	oaChunkChoice
	Delta oaStreamDelta `json:"delta"`
}

type oaStreamDelta struct {
	oaDelta
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
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
	if c.ServiceTier != "" {
		s.tier = c.ServiceTier
	}
	out := s.start(c.ID, c.Model)
	if c.Usage != nil {
		s.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if t := reasoningText(ch.Delta.ReasoningContent, ch.Delta.Reasoning); t != "" {
			if s.open < 0 || s.openKind != blockThinking {
				out = append(out, s.stopBlock()...)
				out = append(out, s.startBlock(thinkingBlock(""), blockThinking, -1)...)
			}
			out = append(out, s.blockDelta(anBlockDelta{Type: "thinking_delta", Thinking: t})...)
		}
		for _, text := range []*string{ch.Delta.Content, ch.Delta.Refusal} {
			if text == nil || *text == "" {
				continue
			}
			if s.open < 0 || s.openKind != blockText {
				out = append(out, s.stopBlock()...)
				out = append(out, s.startBlock(textBlock(""), blockText, -1)...)
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
				block := anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage("{}"), Caller: directCaller}
				out = append(out, s.startBlock(block, blockTool, k)...)
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
	usage := anUsageFromOpenAI(nil, s.tier)
	usage.InputTokens = max(s.opt.InputTokens, 0)
	msg := anResponse{
		ID:      anthropicMessageID(id),
		Type:    "message",
		Role:    "assistant",
		Model:   model,
		Content: []anBlock{},
		Usage:   usage,
	}
	return anEvent(anStreamEvent{Type: "message_start", Message: &msg})
}

func (s *openAIToAnthropic) startBlock(b anBlock, kind, tool int) []byte {
	s.open, s.openKind, s.openTool = s.blocks, kind, tool
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
	s.open, s.openKind, s.openTool = -1, blockText, -1
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
	u := anUsageFromOpenAI(s.usage, s.tier)
	du := &anDeltaUsage{OutputTokens: u.OutputTokens}
	if s.usage != nil {
		du.InputTokens = &u.InputTokens
		du.CacheCreationInputTokens = &u.CacheCreationInputTokens
		du.CacheReadInputTokens = &u.CacheReadInputTokens
		du.OutputTokensDetails = u.OutputTokensDetails
		du.ServerToolUse = u.ServerToolUse
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
