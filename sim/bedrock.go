package sim

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/switchover-gw/switchover/awsauth"
	"github.com/switchover-gw/switchover/internal/eventstream"
)

// This file holds the Amazon Bedrock flavour: POST
// /model/{modelId}/converse and converse-stream (the Converse API, any
// model) and /invoke and /invoke-with-response-stream (Claude's native
// Messages body), SigV4 signatures verified by signing the request again
// with the AWS SDK's signer, Bedrock's error shape (a JSON message and the
// exception's name in x-amzn-ErrorType) and its streams in the AWS
// event-stream framing. A throttled call is ThrottlingException (429)
// without Retry-After and without rate-limit headers, as Bedrock sends
// none.

// bedrockModelName is the deployment name checked against nameRE: a
// Bedrock model ID's version (":0") and an ARN's separators are allowed.
func bedrockModelName(fl Flavour, name string) string {
	if fl != Bedrock {
		return name
	}
	return strings.NewReplacer(":", "", "/", "").Replace(name)
}

// routeBedrock serves the four runtime calls for the deployment's model.
func (d *deployment) routeBedrock(w http.ResponseWriter, r *http.Request, dr draws) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/model/")
	i := strings.LastIndexByte(rest, '/')
	if !ok || i < 0 || r.Method != http.MethodPost {
		d.writeError(w, apiError{status: http.StatusNotFound, body: bedrockMessage{"UnknownOperationException"}})
		return
	}
	model, action := rest[:i], rest[i+1:]
	rt := route{op: opMessages, bedrock: action}
	switch action {
	case "converse", "converse-stream", "invoke", "invoke-with-response-stream":
	default:
		d.writeError(w, apiError{status: http.StatusNotFound, body: bedrockMessage{"UnknownOperationException"}})
		return
	}
	if model != d.cfg.Deployment {
		d.writeError(w, apiError{status: http.StatusBadRequest, body: bedrockMessage{"The provided model identifier is invalid."}})
		return
	}
	d.serve(w, r, dr, rt)
}

// bedrockMessage is Bedrock's error body.
type bedrockMessage struct {
	Message string `json:"message"`
}

// checkSigV4 verifies r's signature (r's body is body) at now against
// the deployment's key (ACCESS_KEY_ID:SECRET_ACCESS_KEY) and region. No
// key: any request passes. It returns the error to answer and true for a
// request that fails.
func (d *deployment) checkSigV4(r *http.Request, body []byte, now time.Time) (apiError, bool) {
	if d.cfg.Key == "" {
		return apiError{}, false
	}
	if r.Header.Get("Authorization") == "" {
		return apiError{status: http.StatusForbidden, body: bedrockMessage{"Missing Authentication Token"}}, true
	}
	id, secret, _ := strings.Cut(d.cfg.Key, ":")
	v := awsauth.Verifier{Lookup: func(k string) (aws.Credentials, bool) {
		return aws.Credentials{AccessKeyID: id, SecretAccessKey: secret}, k == id
	}}
	if _, err := v.Verify(r, body, d.cfg.Region, now); err != nil {
		return apiError{status: http.StatusForbidden, body: bedrockMessage{"The request signature we calculated does not match the signature you provided. (" + err.Error() + ")"}}, true
	}
	return apiError{}, false
}

// bedrockErr is e in Bedrock's shape: its message, and the exception its
// status stands for in x-amzn-ErrorType.
func bedrockErr(h http.Header, e apiError) apiError {
	msg := errorMessage(e.body)
	name, status := "InternalServerException", e.status
	switch e.status {
	case http.StatusBadRequest:
		name = "ValidationException"
	case http.StatusUnauthorized:
		name, status = "UnrecognizedClientException", http.StatusForbidden
	case http.StatusForbidden:
		name = "AccessDeniedException"
		if strings.Contains(msg, "signature") || strings.Contains(msg, "Authentication Token") {
			name = "InvalidSignatureException"
		}
	case http.StatusNotFound:
		name = "ResourceNotFoundException"
		if msg == "UnknownOperationException" {
			name = msg
		}
	case http.StatusTooManyRequests:
		name = "ThrottlingException"
	case http.StatusRequestTimeout:
		name = "ModelTimeoutException"
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
		name, status = "ServiceUnavailableException", http.StatusServiceUnavailable
	}
	h.Set("X-Amzn-Errortype", name+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	return apiError{status: status, body: bedrockMessage{msg}}
}

// errorMessage is the message of another flavour's error body.
func errorMessage(body any) string {
	var e struct {
		Message string
		Error   json.RawMessage
	}
	_ = json.Unmarshal(mustJSON(body), &e)
	if e.Message != "" {
		return e.Message
	}
	var inner struct{ Message string }
	if json.Unmarshal(e.Error, &inner) == nil && inner.Message != "" {
		return inner.Message
	}
	return "The server encountered an error processing your request."
}

// converseRequest is the part of a Converse request the sim reads.
type converseRequest struct {
	Messages []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
	System          []json.RawMessage `json:"system"`
	InferenceConfig *struct {
		MaxTokens *int `json:"maxTokens"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
		ToolChoice map[string]json.RawMessage `json:"toolChoice"`
	} `json:"toolConfig"`
}

// converseBlock is a content block of a Converse request.
type converseBlock struct {
	Text    *string `json:"text"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		ToolUseID string            `json:"toolUseId"`
		Content   []json.RawMessage `json:"content"`
	} `json:"toolResult"`
}

// parseBedrock parses a call's body: Claude's native body for invoke, a
// Converse request (read as the Messages request it maps to, so the
// quota, tools and answers are Anthropic's) for converse. Errors wrap
// errBadRequest.
func parseBedrock(rt route, body []byte) (*request, error) {
	stream := strings.HasSuffix(rt.bedrock, "-stream")
	if strings.HasPrefix(rt.bedrock, "invoke") {
		req, err := parseMessages(body)
		if err == nil {
			req.stream = stream
		}
		return req, err
	}
	var c converseRequest
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, badRequest("Malformed input request: %v", err)
	}
	if len(c.Messages) == 0 {
		return nil, badRequest("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	m := map[string]any{"max_tokens": DefaultMaxTokens}
	if c.InferenceConfig != nil && c.InferenceConfig.MaxTokens != nil {
		m["max_tokens"] = *c.InferenceConfig.MaxTokens
	}
	var sys []any
	for _, raw := range c.System {
		if b := anthropicOf(raw); b != nil {
			sys = append(sys, b)
		}
	}
	if len(sys) > 0 {
		m["system"] = sys
	}
	var msgs []any
	for _, msg := range c.Messages {
		blocks := []any{}
		for _, raw := range msg.Content {
			if b := anthropicOf(raw); b != nil {
				blocks = append(blocks, b)
			}
		}
		msgs = append(msgs, map[string]any{"role": msg.Role, "content": blocks})
	}
	m["messages"] = msgs
	if tc := c.ToolConfig; tc != nil {
		var tools []any
		for _, t := range tc.Tools {
			tools = append(tools, map[string]any{"name": t.ToolSpec.Name, "description": t.ToolSpec.Description, "input_schema": t.ToolSpec.InputSchema.JSON})
		}
		m["tools"] = tools
		for k, v := range tc.ToolChoice {
			choice := map[string]any{"type": k}
			if k == "tool" {
				var n struct{ Name string }
				_ = json.Unmarshal(v, &n)
				choice["name"] = n.Name
			}
			m["tool_choice"] = choice
		}
	}
	req, err := parseMessages(mustJSON(m))
	if err == nil {
		req.converse, req.stream = true, stream
	}
	return req, err
}

// anthropicOf is the Anthropic block of a Converse block the sim reads
// (text, tool use and result); nil for others.
func anthropicOf(raw json.RawMessage) map[string]any {
	var b converseBlock
	if json.Unmarshal(raw, &b) != nil {
		return nil
	}
	switch {
	case b.Text != nil:
		return map[string]any{"type": "text", "text": *b.Text}
	case b.ToolUse != nil:
		return map[string]any{"type": "tool_use", "id": b.ToolUse.ToolUseID, "name": b.ToolUse.Name, "input": b.ToolUse.Input}
	case b.ToolResult != nil:
		var text strings.Builder
		for _, c := range b.ToolResult.Content {
			var t converseBlock
			if json.Unmarshal(c, &t) == nil && t.Text != nil {
				text.WriteString(*t.Text)
			}
		}
		return map[string]any{"type": "tool_result", "tool_use_id": b.ToolResult.ToolUseID, "content": text.String()}
	}
	return nil
}

// converseStop is Converse's stopReason for Anthropic's stop_reason.
func converseStop(r string) string {
	if r == "refusal" {
		return "content_filtered"
	}
	return r
}

// converseBody is the Converse answer for an Anthropic one.
func converseBody(an anthropicMessage) any {
	var m struct {
		Content []struct {
			Type, Text, ID, Name, Thinking, Signature string
			Input                                     json.RawMessage
		}
		StopReason string `json:"stop_reason"`
		Usage      struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		}
	}
	_ = json.Unmarshal(mustJSON(an), &m)
	content := []any{}
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			content = append(content, map[string]any{"text": c.Text})
		case "tool_use":
			content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": c.Input}})
		case "thinking":
			content = append(content, map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]any{"text": c.Thinking, "signature": c.Signature}}})
		}
	}
	return map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": converseStop(m.StopReason),
		"usage":      map[string]int{"inputTokens": m.Usage.InputTokens, "outputTokens": m.Usage.OutputTokens, "totalTokens": m.Usage.InputTokens + m.Usage.OutputTokens},
		"metrics":    map[string]int{"latencyMs": 0},
	}
}

// bedrockEvents frames an Anthropic stream as Bedrock sends it: each
// event in a chunk for invoke, Converse's events for converse
// (messageStart, contentBlockStart for tool use, contentBlockDelta,
// contentBlockStop, messageStop at message_delta and metadata with the
// usage at message_stop). Delays and final marks carry over.
func bedrockEvents(req *request, evs []sseEvent) []sseEvent {
	out := make([]sseEvent, 0, len(evs))
	frame := func(ev sseEvent, typ string, payload any) {
		b, err := eventstream.Encode(nil, &eventstream.Message{Headers: []eventstream.Header{
			eventstream.String(":event-type", typ), eventstream.String(":content-type", "application/json"), eventstream.String(":message-type", "event"),
		}, Payload: mustJSON(payload)})
		if err != nil {
			panic(err) // the sim's own events always frame
		}
		out = append(out, sseEvent{delay: ev.delay, data: b, final: ev.final, raw: true})
	}
	if req == nil || !req.converse {
		for _, ev := range evs {
			frame(ev, "chunk", map[string]string{"bytes": base64.StdEncoding.EncodeToString(ev.data)})
		}
		return out
	}
	var input, output int
	for _, ev := range evs {
		var e struct {
			Index        int `json:"index"`
			ContentBlock *struct {
				Type, ID, Name string
			} `json:"content_block"`
			Delta *struct {
				Type, Text, Thinking, Signature string
				PartialJSON                     string `json:"partial_json"`
				StopReason                      string `json:"stop_reason"`
			} `json:"delta"`
			Message *struct {
				Usage struct {
					InputTokens int `json:"input_tokens"`
				}
			} `json:"message"`
			Usage *struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(ev.data, &e)
		switch ev.name {
		case "message_start":
			if e.Message != nil {
				input = e.Message.Usage.InputTokens
			}
			frame(ev, "messageStart", map[string]string{"role": "assistant"})
		case "content_block_start":
			if e.ContentBlock != nil && e.ContentBlock.Type == "tool_use" {
				frame(ev, "contentBlockStart", map[string]any{"contentBlockIndex": e.Index,
					"start": map[string]any{"toolUse": map[string]string{"toolUseId": e.ContentBlock.ID, "name": e.ContentBlock.Name}}})
			}
		case "content_block_delta":
			if e.Delta == nil {
				continue
			}
			var delta any
			switch e.Delta.Type {
			case "text_delta":
				delta = map[string]string{"text": e.Delta.Text}
			case "input_json_delta":
				delta = map[string]any{"toolUse": map[string]string{"input": e.Delta.PartialJSON}}
			case "thinking_delta":
				delta = map[string]any{"reasoningContent": map[string]string{"text": e.Delta.Thinking}}
			case "signature_delta":
				delta = map[string]any{"reasoningContent": map[string]string{"signature": e.Delta.Signature}}
			default:
				continue
			}
			frame(ev, "contentBlockDelta", map[string]any{"contentBlockIndex": e.Index, "delta": delta})
		case "content_block_stop":
			frame(ev, "contentBlockStop", map[string]int{"contentBlockIndex": e.Index})
		case "message_delta":
			if e.Usage != nil {
				output = e.Usage.OutputTokens
			}
			stop := ""
			if e.Delta != nil {
				stop = converseStop(e.Delta.StopReason)
			}
			frame(ev, "messageStop", map[string]string{"stopReason": stop})
		case "message_stop":
			frame(ev, "metadata", map[string]any{"usage": map[string]int{"inputTokens": input, "outputTokens": output, "totalTokens": input + output},
				"metrics": map[string]int{"latencyMs": 0}})
		}
	}
	return out
}
