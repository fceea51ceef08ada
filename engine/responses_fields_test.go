package engine

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// openResponsesRequired are the members the Open Responses schema
// (ResponseResource) requires of every response object.
var openResponsesRequired = []string{"id", "object", "created_at", "completed_at", "status", "incomplete_details", "model",
	"previous_response_id", "instructions", "output", "error", "tools", "tool_choice", "truncation", "parallel_tool_calls",
	"text", "top_p", "presence_penalty", "frequency_penalty", "top_logprobs", "temperature", "reasoning", "user", "usage",
	"max_output_tokens", "max_tool_calls", "store", "background", "service_tier", "metadata", "safety_identifier",
	"prompt_cache_key"}

// checkResponseObject fails the test unless resp has every member the
// Open Responses schema requires, with the types it gives them:
// completed_at an integer once completed and null before.
func checkResponseObject(t *testing.T, where string, resp json.RawMessage) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(resp, &m); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	for _, k := range openResponsesRequired {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: no %s in %s", where, k, resp)
		}
	}
	var typed struct {
		Status           string   `json:"status"`
		CompletedAt      *int64   `json:"completed_at"`
		PresencePenalty  *float64 `json:"presence_penalty"`
		FrequencyPenalty *float64 `json:"frequency_penalty"`
		TopLogprobs      *int64   `json:"top_logprobs"`
		ServiceTier      *string  `json:"service_tier"`
	}
	if err := json.Unmarshal(resp, &typed); err != nil {
		t.Fatalf("%s: a member of the wrong type: %v", where, err)
	}
	if (typed.Status == "completed") != (typed.CompletedAt != nil) {
		t.Errorf("%s: status %s with completed_at %s", where, typed.Status, m["completed_at"])
	}
	if typed.PresencePenalty == nil || typed.FrequencyPenalty == nil || typed.TopLogprobs == nil || typed.ServiceTier == nil || *typed.ServiceTier == "" {
		t.Errorf("%s: penalties, top_logprobs or service_tier null: %s", where, resp)
	}
}

// TestTranslatedResponsesHaveEveryRequiredField: the Responses objects
// the gateway builds (for a member without the Responses API) lacked
// completed_at, presence_penalty, frequency_penalty, top_logprobs and
// service_tier, which the Open Responses schema requires, plain and in
// every response a stream carries. The simulator's own (aoai-weu,
// openai, passed through) must have them too.
func TestTranslatedResponsesHaveEveryRequiredField(t *testing.T) {
	for _, member := range []string{"aoai-weu", "openai", "claude", "gemini"} {
		t.Run(member, func(t *testing.T) {
			e := startProviders(t, []string{member}, nil, "")
			const req = `{"model":"chat-prod","input":"hello","max_output_tokens":64%s}`
			status, body := e.postRaw(t, "/v1/responses", strings.Replace(req, "%s", "", 1))
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			checkResponseObject(t, "plain", json.RawMessage(body))

			status, stream := e.postRaw(t, "/v1/responses", strings.Replace(req, "%s", `,"stream":true`, 1))
			if status != http.StatusOK {
				t.Fatalf("stream status %d: %s", status, stream)
			}
			seen := 0
			for _, ev := range sseData(t, stream) {
				if r, ok := ev["response"]; ok {
					seen++
					checkResponseObject(t, "event "+string(ev["type"]), r)
				}
			}
			if seen < 3 {
				t.Fatalf("%d events with a response, want created, in_progress and completed: %s", seen, stream)
			}
		})
	}
}
