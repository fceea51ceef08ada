package translate_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/switchover-gw/switchover/translate"
)

// An Anthropic client served by a Gemini backend: the Gemini stream goes
// through the canonical OpenAI chunks to Anthropic events.
func ExampleChain() {
	gemini := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi!\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}]," +
		"\"usageMetadata\":{\"promptTokenCount\":3,\"candidatesTokenCount\":2,\"totalTokenCount\":5},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"r1\"}\r\n\r\n"
	conv := translate.Chain(
		translate.NewGeminiToOpenAIStream("gemini-2.5-flash", true),
		translate.NewOpenAIToAnthropicStream(),
	)
	out, err := io.ReadAll(translate.NewReader(io.NopCloser(strings.NewReader(gemini)), conv))
	fmt.Print(string(out), err)
	// Output:
	// event: message_start
	// data: {"type":"message_start","message":{"id":"msg_r1","type":"message","role":"assistant","model":"gemini-2.5-flash","content":[],"stop_reason":null,"stop_sequence":null,"stop_details":null,"container":null,"diagnostics":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens_details":{"thinking_tokens":0},"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","speed":"standard","inference_geo":null}}}
	//
	// event: content_block_start
	// data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}
	//
	// event: content_block_delta
	// data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi!"}}
	//
	// event: content_block_stop
	// data: {"type":"content_block_stop","index":0}
	//
	// event: message_delta
	// data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null,"stop_details":null,"container":null},"usage":{"input_tokens":3,"output_tokens":2,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens_details":{"thinking_tokens":0},"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0}}}
	//
	// event: message_stop
	// data: {"type":"message_stop"}
	//
	// <nil>
}

// A request a backend cannot serve as asked is refused with an
// UnsupportedError: the gateway tries another backend.
func ExampleOpenAIRequestToAnthropic() {
	body := []byte(`{"model":"chat","messages":[{"role":"user","content":"Pick a number"}],"n":3}`)
	_, err := translate.OpenAIRequestToAnthropic(body, "claude-sonnet-4-5", translate.AnthropicOptions{})
	var u *translate.UnsupportedError
	if errors.As(err, &u) {
		fmt.Println("skip backend:", u)
	}
	// Output:
	// skip backend: anthropic cannot honour n > 1
}
