package translate

import (
	"strings"
	"testing"
	"time"
)

// Error bodies as the providers send them.
const (
	anthropic429 = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later."},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	anthropic529 = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_018EeWyXxfu5pfWkrYcMdjWG"}`
	anthropic400 = `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"user\" roles in a row"}}`
	gemini429    = `{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10\nPlease retry in 12.345s.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"}, "quotaValue": "10"}]},
      {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
      {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}
    ]
  }
}`
	gemini400Key = `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}`
	gemini503    = `[{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]`
	openai429    = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	azure400     = `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"high"}}}}}`
	azure429     = `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`
	openai500    = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	html502      = "<html><body><h1>502 Bad Gateway</h1></body></html>\n"
)

func TestErrorToOpenAI(t *testing.T) {
	for _, tc := range []struct {
		name   string
		from   Format
		status int
		body   string
		want   string
	}{
		{"anthropic 429", Anthropic, 429, anthropic429,
			`{"error":{"message":"Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`},
		{"anthropic 529", Anthropic, 529, anthropic529, `{"error":{"message":"Overloaded","type":"server_error","param":null,"code":"overloaded"}}`},
		{"anthropic 400", Anthropic, 400, anthropic400,
			`{"error":{"message":"messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"user\" roles in a row","type":"invalid_request_error","param":null,"code":null}}`},
		{"anthropic unknown type", Anthropic, 409, `{"type":"error","error":{"type":"conflict_error","message":"busy"}}`,
			`{"error":{"message":"busy","type":"invalid_request_error","param":null,"code":"conflict_error"}}`},
		{"gemini 429", Gemini, 429, gemini429,
			`{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10\nPlease retry in 12.345s.","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`},
		{"gemini bad key", Gemini, 400, gemini400Key,
			`{"error":{"message":"API key not valid. Please pass a valid API key.","type":"authentication_error","param":null,"code":"invalid_api_key"}}`},
		{"gemini 503 in a list", Gemini, 503, gemini503,
			`{"error":{"message":"The model is overloaded. Please try again later.","type":"server_error","param":null,"code":"overloaded"}}`},
		{"openai unchanged", OpenAI, 429, openai429, openai429},
		{"azure unchanged", OpenAI, 400, azure400, azure400},
		{"azure gateway shape unchanged", OpenAI, 429, azure429, azure429},
		{"html", OpenAI, 502, html502, `{"error":{"message":"<html><body><h1>502 Bad Gateway</h1></body></html>","type":"server_error","param":null,"code":null}}`},
		{"empty 429", Gemini, 429, "", `{"error":{"message":"Too Many Requests","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`},
		{"plain text 401", Anthropic, 401, "unauthorized", `{"error":{"message":"unauthorized","type":"authentication_error","param":null,"code":null}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ErrorToOpenAI(tc.from, tc.status, []byte(tc.body))
			if tc.from == OpenAI && tc.body == tc.want {
				if string(got) != tc.body {
					t.Errorf("an OpenAI-shaped body was changed: %s", got)
				}
				return
			}
			assertJSON(t, got, tc.want)
		})
	}
}

func TestErrorToAnthropic(t *testing.T) {
	for _, tc := range []struct {
		name   string
		from   Format
		status int
		body   string
		want   string
	}{
		{"openai 429 insufficient_quota", OpenAI, 429, openai429,
			`{"type":"error","error":{"type":"rate_limit_error","message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."},"request_id":null}`},
		{"azure 400 content_filter", OpenAI, 400, azure400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry."},"request_id":null}`},
		{"azure 429", OpenAI, 429, azure429,
			`{"type":"error","error":{"type":"rate_limit_error","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."},"request_id":null}`},
		{"openai 500", OpenAI, 500, openai500, `{"type":"error","error":{"type":"api_error","message":"The server had an error while processing your request. Sorry about that!"},"request_id":null}`},
		{"gemini 429", Gemini, 429, gemini429,
			`{"type":"error","error":{"type":"rate_limit_error","message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10\nPlease retry in 12.345s."},"request_id":null}`},
		{"gemini 503", Gemini, 503, gemini503, `{"type":"error","error":{"type":"overloaded_error","message":"The model is overloaded. Please try again later."},"request_id":null}`},
		{"gemini in stream", Gemini, 200, gemini503, `{"type":"error","error":{"type":"overloaded_error","message":"The model is overloaded. Please try again later."}}`},
		{"openai in stream", OpenAI, 0, `{"error":{"message":"slow down","type":"tokens","code":"rate_limit_exceeded"}}`, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`},
		{"404", OpenAI, 404, `{"error":{"message":"The model 'x' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			`{"type":"error","error":{"type":"not_found_error","message":"The model 'x' does not exist"},"request_id":null}`},
		{"413", Gemini, 413, "Request Entity Too Large", `{"type":"error","error":{"type":"request_too_large","message":"Request Entity Too Large"},"request_id":null}`},
		{"401", Gemini, 401, "", `{"type":"error","error":{"type":"authentication_error","message":"Unauthorized"},"request_id":null}`},
		{"403", OpenAI, 403, `{"error":{"message":"forbidden","type":"invalid_request_error"}}`, `{"type":"error","error":{"type":"permission_error","message":"forbidden"},"request_id":null}`},
		{"529 html", OpenAI, 529, html502, `{"type":"error","error":{"type":"overloaded_error","message":"<html><body><h1>502 Bad Gateway</h1></body></html>"},"request_id":null}`},
		{"anthropic unchanged", Anthropic, 529, anthropic529, anthropic529},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ErrorToAnthropic(tc.from, tc.status, []byte(tc.body))
			if tc.from == Anthropic && tc.body == tc.want {
				if string(got) != tc.body {
					t.Errorf("an Anthropic-shaped body was changed: %s", got)
				}
				return
			}
			assertJSON(t, got, tc.want)
		})
	}
}

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		from Format
		body string
		want string
	}{
		{"anthropic 429", Anthropic, anthropic429, "rate_limit_error"},
		{"anthropic 529", Anthropic, anthropic529, "overloaded_error"},
		{"anthropic stream event", Anthropic, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error"},
		{"gemini 429", Gemini, gemini429, "RESOURCE_EXHAUSTED"},
		{"gemini list", Gemini, gemini503, "UNAVAILABLE"},
		{"openai 429", OpenAI, openai429, "insufficient_quota"},
		{"azure content filter", OpenAI, azure400, "content_filter"},
		{"azure 429", OpenAI, azure429, "429"},
		{"openai null code falls back to type", OpenAI, openai500, "server_error"},
		{"openai numeric code", OpenAI, `{"error":{"code":429,"message":"x"}}`, "429"},
		{"prefix", Gemini, gemini429[:strings.Index(gemini429, `"details"`)], "RESOURCE_EXHAUSTED"},
		{"prefix cut in the code", Anthropic, anthropic529[:45], ""},
		{"nested keys do not count", OpenAI, `{"choices":[{"error":{"code":"x"}}]}`, ""},
		{"no error", OpenAI, `{"id":"x"}`, ""},
		{"html", OpenAI, html502, ""},
		{"empty", Gemini, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ErrorCode(tc.from, []byte(tc.body)); got != tc.want {
				t.Errorf("ErrorCode = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		from Format
		body string
		want time.Duration
	}{
		{"gemini 429", Gemini, gemini429, 12 * time.Second},
		{"fraction", Gemini, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.5s"}]}}`, 500 * time.Millisecond},
		{"delay before type", Gemini, `{"error":{"details":[{"retryDelay":"3s","@type":"type.googleapis.com/google.rpc.RetryInfo"}]}}`, 3 * time.Second},
		{"in a list", Gemini, `[{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}]`, 7 * time.Second},
		{"not RetryInfo", Gemini, `{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.Help","retryDelay":"9s"}]}}`, 0},
		{"prefix", Gemini, gemini429[:strings.Index(gemini429, `12s"}`)+5], 12 * time.Second},
		{"prefix cut in the delay", Gemini, gemini429[:strings.Index(gemini429, `12s"}`)+2], 0},
		{"absent", Gemini, gemini503, 0},
		{"garbage", Gemini, `{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"soon"}]}}`, 0},
		{"other format", Anthropic, gemini429, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RetryDelay(tc.from, []byte(tc.body)); got != tc.want {
				t.Errorf("RetryDelay = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestErrorToAnthropicRequestID: an error answer the gateway builds
// carries the request's id as request_id, as Anthropic's own errors do;
// an error event in a stream has none; an Anthropic body keeps its own.
func TestErrorToAnthropicRequestID(t *testing.T) {
	got := ErrorToAnthropicID(OpenAI, 404, []byte(`{"error":{"message":"no such model","type":"invalid_request_error","code":"model_not_found"}}`), "req-1")
	assertJSON(t, got, `{"type":"error","error":{"type":"not_found_error","message":"no such model"},"request_id":"req-1"}`)
	got = ErrorToAnthropicID(OpenAI, 0, []byte(`{"error":{"message":"slow down","type":"tokens","code":"rate_limit_exceeded"}}`), "req-1")
	assertJSON(t, got, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	own := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011abc"}`
	if got := ErrorToAnthropicID(Anthropic, 529, []byte(own), "req-1"); string(got) != own {
		t.Errorf("an Anthropic body was changed: %s", got)
	}
}
