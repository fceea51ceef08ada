package route

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/switchover-gw/switchover/translate"
)

// A stream is passed on to the client, past the point of failover, at its
// first event that carries content: a piece of the answer (text, a tool
// call's arguments, a refusal, reasoning), the answer's end (a finish
// reason, [DONE], message_stop, response.completed) or the backend's own
// error event. The events before it commit nothing: Azure's
// prompt_filter_results (a chunk with "choices": [] sent before the
// model has produced anything), a role-only delta, a chunk with empty
// choices, Anthropic's message_start, content_block_start and ping,
// Responses' response.created, response.in_progress and the items and
// parts opened empty, Gemini chunks with no part. Until the first
// content the attempt is still waiting for its first byte, under the
// first-byte timeout and the health check of a backend whose calls wait
// too long: a backend that sent those events and then died or went
// silent is failed over like one that sent nothing, and the events it
// sent are dropped. Once content comes, the events held back go first,
// then the content, in the order they came.

// maxHeld bounds the events held back before a stream's first content. A
// stream whose events are all held until then (Responses' response.created
// echoes the request's instructions and tools) is passed on at this size,
// as it stands: the failover it might still have had is worth less than
// the memory of every stream that waits.
const maxHeld = 128 << 10

// answersInEvents reports whether a stream of operation op carries its
// answer in events whose content readToContent can tell (chat,
// completions, the Responses API): the others are passed on at their
// first event.
func answersInEvents(op Operation) bool {
	return op.IsChat() || op == Completions || op == Responses
}

// readToContent reads src, a stream in format f, up to and including the
// first line of its first event that carries content (see above), and
// returns a reader of the stream from its first event on: the events held
// back, the content, then the rest of src. Comments and blank lines before
// the first event are dropped, as readToFirstEvent drops them; onFirst, if
// not nil, is called when the first event, content or not, has come. A
// stream that ends, or fails, before any content gives the error (io.EOF
// for a clean end): it answered nothing, and may be failed over.
func readToContent(src io.Reader, f translate.Format, onFirst func()) (io.Reader, error) {
	br := firstEventReaders.Get().(*bufio.Reader)
	br.Reset(src)
	defer func() {
		br.Reset(nil)
		firstEventReaders.Put(br)
	}()
	if err := firstEvent(br); err != nil {
		return nil, err
	}
	if onFirst != nil {
		onFirst()
	}
	var held []byte
	for {
		start := len(held)
		var err error
		held, err = appendLine(held, br)
		line := held[start:]
		if err != nil && (err != io.EOF || len(line) == 0) {
			return nil, err
		}
		if err == io.EOF {
			// The last line, unterminated: the stream ends with it.
			if !contentLine(f, line) {
				return nil, io.EOF
			}
			return bytes.NewReader(held), nil
		}
		if contentLine(f, line) || len(held) > maxHeld {
			break
		}
	}
	buffered, _ := br.Peek(br.Buffered())
	pending := make([]byte, 0, len(held)+len(buffered))
	pending = append(append(pending, held...), buffered...)
	return &pendingReader{pending: pending, r: src}, nil
}

// appendLine appends the next line of br, its newline included, to held,
// whatever its length. At the end of the stream it appends what is left
// and returns io.EOF.
func appendLine(held []byte, br *bufio.Reader) ([]byte, error) {
	for {
		part, err := br.ReadSlice('\n')
		held = append(held, part...)
		if err != bufio.ErrBufferFull {
			return held, err
		}
		if len(held) > maxHeld {
			return held, nil
		}
	}
}

// contentLine reports whether an SSE line of a stream in format f is the
// data of an event that carries content. Lines other than data (event:,
// id:, comments, blank lines) carry none; data that cannot be read is
// taken for content, as the stream was before it was told apart.
func contentLine(f translate.Format, line []byte) bool {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
	if !ok {
		return false
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return false
	}
	switch f {
	case translate.Anthropic:
		return anthropicContent(data)
	case translate.Responses:
		return responsesContent(data)
	case translate.Gemini:
		return geminiContent(data)
	}
	return openAIContent(data)
}

// openAIContent reports whether an OpenAI chat or completions chunk
// carries content: a delta with anything but its role (and empty values),
// a completion's text, a finish_reason, or an error. A chunk with no
// choices field at all is not one an OpenAI-style server sends before its
// answer: taken for content.
func openAIContent(data []byte) bool {
	if string(data) == "[DONE]" {
		return true
	}
	if content, ok := openAIContentScan(data); ok {
		return content
	}
	return openAIContentDecoded(data)
}

// openAIContentDecoded is openAIContent by encoding/json, for what
// openAIContentScan leaves to it.
func openAIContentDecoded(data []byte) bool {
	var c struct {
		Choices *[]struct {
			Delta        map[string]json.RawMessage `json:"delta"`
			Text         json.RawMessage            `json:"text"`
			FinishReason json.RawMessage            `json:"finish_reason"`
		} `json:"choices"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &c) != nil || c.Choices == nil || !emptyJSON(c.Error) {
		return true
	}
	for _, ch := range *c.Choices {
		if !emptyJSON(ch.Text) || !emptyJSON(ch.FinishReason) {
			return true
		}
		for k, v := range ch.Delta {
			if k != "role" && !emptyJSON(v) {
				return true
			}
		}
	}
	return false
}

// emptyJSON reports whether a JSON value is absent or empty: null, "",
// [] or {}.
func emptyJSON(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case "", "null", `""`, "[]", "{}":
		return true
	}
	return false
}

// anthropicContent reports whether an Anthropic stream event carries
// content: everything but message_start, ping and content_block_start
// (a block opened empty) does.
func anthropicContent(data []byte) bool {
	switch eventType(data) {
	case "message_start", "ping", "content_block_start":
		return false
	}
	return true
}

// responsesContent reports whether a Responses API stream event carries
// content. The response's own state (created, queued, in_progress), an
// output item or part opened empty, and a built-in tool's progress (a
// web search searching, code interpreting, an image generating) do not.
func responsesContent(data []byte) bool {
	t := eventType(data)
	switch t {
	case "response.created", "response.queued", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.reasoning_summary_part.added":
		return false
	}
	for _, progress := range []string{".in_progress", ".searching", ".interpreting", ".generating"} {
		if strings.HasPrefix(t, "response.") && strings.HasSuffix(t, progress) {
			return false
		}
	}
	return true
}

// eventType is the "type" of an Anthropic or Responses event's data, ""
// if it has none.
func eventType(data []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Type
}

// geminiContent reports whether a Gemini stream chunk carries content: a
// part with anything in it, a finish reason, a blocked prompt, or an
// error. A chunk without candidates is taken for content unless it is
// only usage.
func geminiContent(data []byte) bool {
	var c struct {
		Candidates *[]struct {
			Content struct {
				Parts []map[string]json.RawMessage `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		PromptFeedback struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
		UsageMetadata json.RawMessage `json:"usageMetadata"`
		Error         json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &c) != nil || !emptyJSON(c.Error) || c.PromptFeedback.BlockReason != "" {
		return true
	}
	if c.Candidates == nil {
		return emptyJSON(c.UsageMetadata)
	}
	for _, cand := range *c.Candidates {
		if cand.FinishReason != "" {
			return true
		}
		for _, part := range cand.Content.Parts {
			for _, v := range part {
				if !emptyJSON(v) {
					return true
				}
			}
		}
	}
	return false
}
