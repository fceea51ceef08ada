package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// The structs below mirror the documented GenerateContentResponse and
// Google's error shape. Tests decode with unknown fields disallowed, so
// the sim sends nothing the documentation does not have.

type gResponse struct {
	Candidates     []gCandidate     `json:"candidates"`
	PromptFeedback *gPromptFeedback `json:"promptFeedback"`
	UsageMetadata  *gUsageMetadata  `json:"usageMetadata"`
	ModelVersion   string           `json:"modelVersion"`
	ResponseID     string           `json:"responseId"`
}

type gCandidate struct {
	Content       gContent        `json:"content"`
	FinishReason  string          `json:"finishReason"`
	SafetyRatings []gSafetyRating `json:"safetyRatings"`
	Index         int             `json:"index"`
}

type gContent struct {
	Role  string  `json:"role"`
	Parts []gPart `json:"parts"`
}

type gPart struct {
	Text         string         `json:"text"`
	FunctionCall *gFunctionCall `json:"functionCall"`
}

type gFunctionCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type gUsageMetadata struct {
	PromptTokenCount     int64 `json:"promptTokenCount"`
	CandidatesTokenCount int64 `json:"candidatesTokenCount"`
	TotalTokenCount      int64 `json:"totalTokenCount"`
}

type gPromptFeedback struct {
	BlockReason   string          `json:"blockReason"`
	SafetyRatings []gSafetyRating `json:"safetyRatings"`
}

type gSafetyRating struct {
	Category    string `json:"category"`
	Probability string `json:"probability"`
	Blocked     bool   `json:"blocked"`
}

type gErrorBody struct {
	Error struct {
		Code    int              `json:"code"`
		Message string           `json:"message"`
		Status  string           `json:"status"`
		Details []map[string]any `json:"details"`
	} `json:"error"`
}

// strictDecode decodes b into v, failing on fields v does not have.
func strictDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// oneGemini is a config with one gemini deployment "d1" serving model
// gemini-test.
func oneGemini(mod func(*Deployment)) Config {
	return one(Gemini, func(d *Deployment) {
		d.Deployment = "gemini-test"
		if mod != nil {
			mod(d)
		}
	})
}

func generateURL(ep Endpoint, stream bool) string {
	if stream {
		return ep.URL + "/v1beta/models/" + ep.Deployment + ":streamGenerateContent?alt=sse"
	}
	return ep.URL + "/v1beta/models/" + ep.Deployment + ":generateContent"
}

// geminiBody is a request with one user turn and optional extra fields.
func geminiRequest(prompt string, extra string) string {
	b := `{"contents":[{"role":"user","parts":[{"text":` + jsonString(prompt) + `}]}]`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// geminiChunks reads a Gemini stream: data: events only, no [DONE].
func geminiChunks(t *testing.T, body []byte) []gResponse {
	t.Helper()
	var out []gResponse
	for _, ev := range sseNamedEvents(t, string(body)) {
		if ev.name != "" || ev.data == "[DONE]" {
			t.Fatalf("unexpected event %+v", ev)
		}
		var c gResponse
		strictDecode(t, []byte(ev.data), &c)
		out = append(out, c)
	}
	return out
}

func TestGeminiGenerateContent(t *testing.T) {
	tests := []struct {
		name       string
		extra      string
		wantFinish string
		wantWords  int
		wantPrompt int64
	}{
		{"whole answer", "", "STOP", DefaultReplyTokens, 3},
		{"maxOutputTokens cuts", `"generationConfig":{"maxOutputTokens":4}`, "MAX_TOKENS", 4, 3},
		{"system instruction counts", `"systemInstruction":{"parts":[{"text":"be brief"}]}`, "STOP", DefaultReplyTokens, 5},
		{"snake_case fields", `"system_instruction":{"parts":[{"text":"be brief"}]},"generation_config":{"max_output_tokens":2}`, "MAX_TOKENS", 2, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, oneGemini(func(d *Deployment) { d.Model = "gemini-test-001" }))
			ep := s.Deployments()[0]
			if strings.Count(ep.URL, "/") != 2 {
				t.Fatalf("URL %q should be the bare host", ep.URL)
			}
			resp, b := do(t, http.MethodPost, generateURL(ep, false), geminiRequest("hello gemini", tc.extra), nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			var r gResponse
			strictDecode(t, b, &r)
			if len(r.Candidates) != 1 {
				t.Fatalf("%d candidates", len(r.Candidates))
			}
			c := r.Candidates[0]
			if c.Content.Role != "model" || len(c.Content.Parts) != 1 || len(strings.Fields(c.Content.Parts[0].Text)) != tc.wantWords || c.FinishReason != tc.wantFinish || c.Index != 0 {
				t.Errorf("candidate = %+v, want role model, %d words, %s", c, tc.wantWords, tc.wantFinish)
			}
			u := r.UsageMetadata
			if u == nil || u.PromptTokenCount != tc.wantPrompt || u.CandidatesTokenCount != int64(tc.wantWords) || u.TotalTokenCount != tc.wantPrompt+int64(tc.wantWords) {
				t.Errorf("usage = %+v, want %d prompt, %d candidates", u, tc.wantPrompt, tc.wantWords)
			}
			if r.ModelVersion != "gemini-test-001" || len(r.ResponseID) != 22 {
				t.Errorf("modelVersion %q responseId %q", r.ModelVersion, r.ResponseID)
			}
			for _, h := range []string{"Retry-After", "X-Request-Id", "X-Ratelimit-Remaining-Requests"} {
				if v := resp.Header.Get(h); v != "" {
					t.Errorf("header %s = %q; Gemini sends none", h, v)
				}
			}
		})
	}
}

func TestGeminiStream(t *testing.T) {
	w := &recordWaiter{}
	s := startSim(t, oneGemini(func(d *Deployment) {
		d.Latency = Latency{FirstToken: 200 * time.Millisecond, PerToken: 10 * time.Millisecond}
	}), WithWaiter(w))
	ep := s.Deployments()[0]
	resp, b := do(t, http.MethodPost, generateURL(ep, true), geminiRequest("hello", `"generationConfig":{"maxOutputTokens":5}`), nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if bytes.Contains(b, []byte("[DONE]")) {
		t.Error("stream ends with [DONE]; Gemini sends none")
	}
	chunks := geminiChunks(t, b)
	if len(chunks) != 5 {
		t.Fatalf("%d chunks, want 5 (one per word):\n%s", len(chunks), b)
	}
	var text strings.Builder
	for i, c := range chunks {
		last := i == len(chunks)-1
		if len(c.Candidates) != 1 || len(c.Candidates[0].Content.Parts) != 1 || c.Candidates[0].Content.Role != "model" {
			t.Fatalf("chunk %d = %+v", i, c)
		}
		text.WriteString(c.Candidates[0].Content.Parts[0].Text)
		if (c.Candidates[0].FinishReason != "") != last || (c.UsageMetadata != nil) != last {
			t.Errorf("chunk %d: finishReason %q usage %v; only the last has them", i, c.Candidates[0].FinishReason, c.UsageMetadata)
		}
		if c.ResponseID != chunks[0].ResponseID || c.ModelVersion != "gemini-test" {
			t.Errorf("chunk %d: responseId %q modelVersion %q", i, c.ResponseID, c.ModelVersion)
		}
	}
	lastChunk := chunks[len(chunks)-1]
	if lastChunk.Candidates[0].FinishReason != "MAX_TOKENS" || lastChunk.UsageMetadata.CandidatesTokenCount != 5 || lastChunk.UsageMetadata.PromptTokenCount != 2 {
		t.Errorf("last chunk = %+v", lastChunk)
	}
	if n := len(strings.Fields(text.String())); n != 5 {
		t.Errorf("streamed text %q has %d words, want 5", text.String(), n)
	}
	want := []time.Duration{200 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}
	if got := w.all(); !equalDurations(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
	if st := s.Stats()["d1"]; st.Answered != 1 || st.InFlight != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestGeminiRoutesAndAuth(t *testing.T) {
	s := startSim(t, oneGemini(func(d *Deployment) { d.Key = "AIza-right" }))
	ep := s.Deployments()[0]
	body := geminiRequest("hi", "")
	tests := []struct {
		name       string
		method     string
		url        string
		body       string
		hdr        map[string]string
		wantStatus int
		wantRPC    string
		wantMsg    string
		counted    bool
	}{
		{"key in header", "POST", generateURL(ep, false), body, map[string]string{"x-goog-api-key": "AIza-right"}, 200, "", "", true},
		{"key in query", "POST", generateURL(ep, false) + "?key=AIza-right", body, nil, 200, "", "", true},
		{"missing key", "POST", generateURL(ep, false), body, nil, 403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers", true},
		{"wrong key", "POST", generateURL(ep, false), body, map[string]string{"x-goog-api-key": "AIza-wrong"}, 400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", true},
		{"stream without alt=sse", "POST", strings.TrimSuffix(generateURL(ep, true), "?alt=sse"), body, map[string]string{"x-goog-api-key": "AIza-right"}, 400, "INVALID_ARGUMENT", "alt=sse", true},
		{"no contents", "POST", generateURL(ep, false), `{"contents":[]}`, map[string]string{"x-goog-api-key": "AIza-right"}, 400, "INVALID_ARGUMENT", "contents is not specified", true},
		{"bad json", "POST", generateURL(ep, false), `{"contents":`, map[string]string{"x-goog-api-key": "AIza-right"}, 400, "INVALID_ARGUMENT", "Invalid JSON payload", true},
		{"other model", "POST", ep.URL + "/v1beta/models/gemini-other:generateContent", body, map[string]string{"x-goog-api-key": "AIza-right"}, 404, "NOT_FOUND", "models/gemini-other is not found for API version v1beta", false},
		{"unknown method", "POST", ep.URL + "/v1beta/models/gemini-test:embedContent", body, nil, 404, "NOT_FOUND", "Method not found.", false},
		{"GET", "GET", generateURL(ep, false), "", nil, 404, "NOT_FOUND", "Method not found.", false},
		{"other API version", "POST", ep.URL + "/v1/models/gemini-test:generateContent", body, nil, 404, "NOT_FOUND", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Stats()["d1"].Calls
			resp, b := do(t, tc.method, tc.url, tc.body, tc.hdr)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, tc.wantStatus)
			}
			if tc.wantStatus != 200 {
				var e gErrorBody
				strictDecode(t, b, &e)
				if e.Error.Code != tc.wantStatus || e.Error.Status != tc.wantRPC || !strings.Contains(e.Error.Message, tc.wantMsg) {
					t.Errorf("error = %+v, want %d %s with %q", e.Error, tc.wantStatus, tc.wantRPC, tc.wantMsg)
				}
			}
			if counted := s.Stats()["d1"].Calls > before; counted != tc.counted {
				t.Errorf("counted as a call: %v, want %v", counted, tc.counted)
			}
		})
	}
	// A wrong key says why in ErrorInfo.
	_, b := do(t, http.MethodPost, generateURL(ep, false), body, map[string]string{"x-goog-api-key": "nope"})
	if !strings.Contains(string(b), `"@type":"type.googleapis.com/google.rpc.ErrorInfo"`) || !strings.Contains(string(b), `"reason":"API_KEY_INVALID"`) {
		t.Errorf("wrong key body %s lacks ErrorInfo API_KEY_INVALID", b)
	}
}

func TestGemini429(t *testing.T) {
	tests := []struct {
		name      string
		quota     Quota
		maxTokens int
		admitted  int
		wantQuota string
	}{
		{"requests", Quota{RPM: 60}, 0, 10, "GenerateRequestsPerMinutePerProjectPerModel"},
		{"tokens", Quota{TPM: 600}, 30, 3, "GenerateContentInputTokensPerModelPerMinute"}, // 100 per slice, 2+30 each
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakeclock.New()
			s := startSim(t, oneGemini(func(d *Deployment) { d.Quota = tc.quota }), WithClock(clock))
			ep := s.Deployments()[0]
			clock.Advance(3200 * time.Millisecond)
			extra := ""
			if tc.maxTokens > 0 {
				extra = `"generationConfig":{"maxOutputTokens":30}`
			}
			resp, b := tripQuota(t, clock, tc.admitted, func() (*http.Response, []byte) {
				return do(t, http.MethodPost, generateURL(ep, false), geminiRequest("hello", extra), nil)
			}, 0)
			var e gErrorBody
			strictDecode(t, b, &e)
			if e.Error.Code != 429 || e.Error.Status != "RESOURCE_EXHAUSTED" || e.Error.Message != "Resource has been exhausted (e.g. check quota)." {
				t.Errorf("error = %+v", e.Error)
			}
			var retry, quota map[string]any
			for _, d := range e.Error.Details {
				switch d["@type"] {
				case "type.googleapis.com/google.rpc.RetryInfo":
					retry = d
				case "type.googleapis.com/google.rpc.QuotaFailure":
					quota = d
				}
			}
			if retry == nil || retry["retryDelay"] != "7s" {
				t.Errorf("RetryInfo = %v, want retryDelay 7s", retry)
			}
			if quota == nil || !strings.Contains(string(b), `"quotaId":"`+tc.wantQuota+`"`) {
				t.Errorf("QuotaFailure = %v, want quotaId %s", quota, tc.wantQuota)
			}
			for _, h := range []string{"Retry-After", "Retry-After-Ms"} {
				if v := resp.Header.Get(h); v != "" {
					t.Errorf("%s = %q; the delay is only in the body", h, v)
				}
			}
			if st := s.Stats()["d1"]; st.Refused != 1 || st.Answered != int64(tc.admitted) {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

// weatherDeclaration is a Gemini tool with an OpenAPI-style schema.
const weatherDeclaration = `"tools":[{"functionDeclarations":[
	{"name":"get_weather","description":"weather","parameters":{"type":"OBJECT","properties":{
		"location":{"type":"STRING"},"unit":{"type":"STRING","enum":["celsius","fahrenheit"]},"days":{"type":"INTEGER"},"detailed":{"type":"BOOLEAN"}},
		"required":["location","unit","days"]}},
	{"name":"lookup","parameters":{"type":"object","properties":{"ids":{"type":"array"}},"required":["ids"]}}]}]`

func TestGeminiToolCalls(t *testing.T) {
	s := startSim(t, oneGemini(nil))
	ep := s.Deployments()[0]
	functionResponse := `{"contents":[{"role":"user","parts":[{"text":"weather?"}]},
		{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"location":"x"}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp_c":21}}}]}],` + weatherDeclaration + `}`
	tests := []struct {
		name     string
		body     string
		wantCall string // function name, "" for text
		wantArgs string
	}{
		{"first declared", geminiRequest("weather?", weatherDeclaration), "get_weather", weatherArgs},
		{"mode ANY with allowed names", geminiRequest("weather?", weatherDeclaration+`,"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["lookup"]}}`), "lookup", `{"ids":[]}`},
		{"mode NONE", geminiRequest("weather?", weatherDeclaration+`,"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}`), "", ""},
		{"after a functionResponse", functionResponse, "", ""},
		{"snake_case declarations", geminiRequest("weather?", `"tools":[{"function_declarations":[{"name":"f","parameters":{"type":"object","properties":{"user_id":{"type":"string"}},"required":["user_id"]}}]}]`), "f", `{"user_id":"x"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, http.MethodPost, generateURL(ep, false), tc.body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			var r gResponse
			strictDecode(t, b, &r)
			c := r.Candidates[0]
			if c.FinishReason != "STOP" || len(c.Content.Parts) != 1 {
				t.Fatalf("candidate = %+v, want one part and STOP", c)
			}
			fc := c.Content.Parts[0].FunctionCall
			if tc.wantCall == "" {
				if fc != nil || c.Content.Parts[0].Text == "" {
					t.Errorf("part = %+v, want text", c.Content.Parts[0])
				}
				return
			}
			if fc == nil || fc.Name != tc.wantCall || c.Content.Parts[0].Text != "" {
				t.Fatalf("part = %s, want a call of %s", b, tc.wantCall)
			}
			var want map[string]any
			_ = json.Unmarshal([]byte(tc.wantArgs), &want)
			if !equalJSON(fc.Args, want) {
				t.Errorf("args = %v, want %s", fc.Args, tc.wantArgs)
			}
		})
	}

	t.Run("streamed", func(t *testing.T) {
		resp, b := do(t, http.MethodPost, generateURL(ep, true), geminiRequest("weather?", weatherDeclaration), nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		chunks := geminiChunks(t, b)
		if len(chunks) != 1 {
			t.Fatalf("%d chunks, want one with the call", len(chunks))
		}
		c := chunks[0]
		fc := c.Candidates[0].Content.Parts[0].FunctionCall
		if fc == nil || fc.Name != "get_weather" || c.Candidates[0].FinishReason != "STOP" || c.UsageMetadata == nil {
			t.Errorf("chunk = %s", b)
		}
	})
}

func TestGeminiContentFilter(t *testing.T) {
	s := startSim(t, oneGemini(nil))
	ep := s.Deployments()[0]
	for _, stream := range []bool{false, true} {
		resp, b := do(t, http.MethodPost, generateURL(ep, stream), geminiRequest("please trigger-content-filter", ""), nil)
		if resp.StatusCode != 200 {
			t.Fatalf("blocked (stream %v): %d %s, want 200", stream, resp.StatusCode, b)
		}
		var r gResponse
		if stream {
			chunks := geminiChunks(t, b)
			if len(chunks) != 1 {
				t.Fatalf("%d chunks", len(chunks))
			}
			r = chunks[0]
		} else {
			strictDecode(t, b, &r)
		}
		if len(r.Candidates) != 0 || r.PromptFeedback == nil || r.PromptFeedback.BlockReason != "SAFETY" || r.UsageMetadata.PromptTokenCount != 8 {
			t.Errorf("blocked (stream %v) = %s, want promptFeedback SAFETY and no candidates", stream, b)
		}
	}
	_, b := do(t, http.MethodPost, generateURL(ep, false), geminiRequest("trigger-filtered-reply", ""), nil)
	var r gResponse
	strictDecode(t, b, &r)
	c := r.Candidates[0]
	if c.FinishReason != "SAFETY" || len(strings.Fields(c.Content.Parts[0].Text)) != DefaultReplyTokens/2 || len(c.SafetyRatings) == 0 {
		t.Errorf("truncated = %s, want half the words and finishReason SAFETY with ratings", b)
	}
	if st := s.Stats()["d1"]; st.Filtered != 2 || st.Answered != 1 {
		t.Errorf("stats = %+v, want 2 filtered, 1 answered", st)
	}
}
