package route

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/eventstream"
	"github.com/switchover-gw/switchover/translate"
)

// recordSigner records the body it signed and sets a fake Authorization.
type recordSigner struct {
	body []byte
	err  error
}

func (s *recordSigner) Sign(_ context.Context, req *http.Request, body []byte) error {
	if s.err != nil {
		return s.err
	}
	s.body = body
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 test")
	return nil
}

const bedrockMessages = `{"model":"ignored","max_tokens":16,"messages":[{"role":"user","content":"Hello"}],"stream":true}`

// TestBedrockRequest: the model ID (with its ':' and an ARN's '/'
// escaped as the AWS SDKs do) and the action in the path, a Converse
// body or Claude's native one, signed as sent.
func TestBedrockRequest(t *testing.T) {
	tests := []struct {
		name, api, model string
		stream           bool
		wantURL, accept  string
		wantBody         string
	}{
		{"converse", "", "anthropic.claude-3-5-haiku-20241022-v1:0", false,
			"https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse", "application/json", `"inferenceConfig":{"maxTokens":16}`},
		{"converse stream with a profile", BedrockConverse, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", true,
			"https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream", "application/vnd.amazon.eventstream", `"messages":[{"role":"user","content":[{"text":"Hello"}]}]`},
		{"profile ARN", "", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.meta.llama3-3-70b-instruct-v1:0", false,
			"https://bedrock-runtime.us-east-1.amazonaws.com/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.meta.llama3-3-70b-instruct-v1%3A0/converse", "application/json", `"messages"`},
		{"invoke", BedrockInvoke, "anthropic.claude-3-5-sonnet-20240620-v1:0", false,
			"https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke", "application/json", `"anthropic_version":"bedrock-2023-05-31"`},
		{"invoke stream", BedrockInvoke, "anthropic.claude-3-5-sonnet-20240620-v1:0", true,
			"https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke-with-response-stream", "application/vnd.amazon.eventstream", `"anthropic_beta":["b1","b2"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &recordSigner{}
			p := &Bedrock{Region: "us-east-1", API: tc.api, Signer: s, Header: http.Header{"Anthropic-Beta": {"b1"}}}
			o := &Outgoing{Op: Messages, Model: tc.model, Stream: tc.stream, Body: []byte(bedrockMessages), Header: http.Header{"Anthropic-Beta": {"b2"}}}
			if err := rewrite(p, o); err != nil {
				t.Fatal(err)
			}
			req := sent(t, p, o)
			checkRequest(t, req, http.MethodPost, tc.wantURL, http.Header{"Accept": {tc.accept}, "Content-Type": {"application/json"}, "Authorization": {"AWS4-HMAC-SHA256 test"}})
			body, _ := io.ReadAll(req.Body)
			if !bytes.Equal(body, s.body) {
				t.Errorf("sent %s, signed %s", body, s.body)
			}
			if !strings.Contains(string(body), tc.wantBody) || strings.Contains(string(body), `"model"`) || strings.Contains(string(body), `"stream"`) {
				t.Errorf("body %s, want %s and no model or stream", body, tc.wantBody)
			}
			if again, _ := req.GetBody(); again == nil {
				t.Error("no GetBody")
			}
		})
	}
}

// TestBedrockSignerFailureIsAuth: no credentials is ErrAuth, so another
// member may serve.
func TestBedrockSignerFailureIsAuth(t *testing.T) {
	p := &Bedrock{Region: "us-east-1", Signer: &recordSigner{err: errors.New("no credentials")}}
	_, err := p.NewRequest(t.Context(), &Outgoing{Op: Messages, Model: "m", Body: []byte(bedrockMessages)})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
}

func TestBedrockSupports(t *testing.T) {
	for op, want := range map[Operation]bool{Messages: true, ChatCompletions: false, CountTokens: false, Embeddings: false} {
		if got := (&Bedrock{}).supports(op); got != want {
			t.Errorf("supports(%s) = %v, want %v", op, got, want)
		}
	}
	if kindOf(&Bedrock{}) != "bedrock" {
		t.Errorf("kindOf = %q", kindOf(&Bedrock{}))
	}
}

func bedrockAnswer(status int, header http.Header, body []byte) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
}

// TestBedrockAdaptErrors: Bedrock's exceptions reach the breaker with
// the statuses it counts (throttling and quota 429, a model not ready
// and the service's failures 5xx) and the caller's errors keep their
// 4xx; Retry-After stays.
func TestBedrockAdaptErrors(t *testing.T) {
	tests := []struct {
		exception string
		status    int
		want      int
	}{
		{"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", 429, 429},
		{"ServiceQuotaExceededException", 400, 429},
		{"ModelNotReadyException", 429, 503},
		{"ServiceUnavailableException", 503, 503},
		{"InternalServerException", 500, 500},
		{"ValidationException", 400, 400},
		{"AccessDeniedException", 403, 403},
	}
	p := &Bedrock{Region: "us-east-1"}
	for _, tc := range tests {
		h := http.Header{"X-Amzn-Errortype": {tc.exception}, "Retry-After": {"7"}}
		resp := p.adaptResponse(&Outgoing{Model: "m"}, bedrockAnswer(tc.status, h, []byte(`{"message":"x"}`)))
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.want || !bytes.Contains(body, []byte(`"type":"error"`)) || resp.Header.Get("Retry-After") != "7" {
			t.Errorf("%s: %d %s (Retry-After %q), want %d and Anthropic's error", tc.exception, resp.StatusCode, body, resp.Header.Get("Retry-After"), tc.want)
		}
	}
}

func TestBedrockAdaptAnswers(t *testing.T) {
	p := &Bedrock{Region: "us-east-1"}
	h := http.Header{"X-Amzn-Requestid": {"req-1"}}
	resp := p.adaptResponse(&Outgoing{Model: "m"}, bedrockAnswer(200, h,
		[]byte(`{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4}}`)))
	body, _ := io.ReadAll(resp.Body)
	if want := `"id":"msg_bdrk_req-1"`; !bytes.Contains(body, []byte(want)) || resp.ContentLength != int64(len(body)) {
		t.Errorf("converse answer %s (length %d), want %s", body, resp.ContentLength, want)
	}
	resp = p.adaptResponse(&Outgoing{Model: "m"}, bedrockAnswer(200, h, []byte(`not json`)))
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("an unreadable answer is %d, want 502", resp.StatusCode)
	}
	ev, _ := eventstream.Encode(nil, &eventstream.Message{Headers: []eventstream.Header{
		eventstream.String(":message-type", "event"), eventstream.String(":event-type", "messageStart")}, Payload: []byte(`{"role":"assistant"}`)})
	resp = p.adaptResponse(&Outgoing{Model: "m", Stream: true}, bedrockAnswer(200, http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, ev))
	body, _ = io.ReadAll(resp.Body)
	if !IsEventStream(resp.Header) || !bytes.HasPrefix(body, []byte("event: message_start\n")) {
		t.Errorf("stream %q (%s)", body, resp.Header.Get("Content-Type"))
	}
}

// TestBedrockSkipsWhatConverseCannotCarry: an image by URL cannot be
// sent to Converse: preparing the attempt fails with an UnsupportedError,
// which skips the member with its reason instead of failing the call.
func TestBedrockSkipsWhatConverseCannotCarry(t *testing.T) {
	r, err := NewRequest(Messages, []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = prepare(r, &Member{Backend: &Backend{Name: "b", Provider: &Bedrock{Region: "us-east-1"}}, Deployment: "anthropic.claude-3-5-haiku-20241022-v1:0"})
	var ue *translate.UnsupportedError
	if !errors.As(err, &ue) {
		t.Fatalf("prepare = %v, want an UnsupportedError", err)
	}
	if got := skipReason(&Bedrock{}, ue); !strings.HasPrefix(got, "bedrock cannot honour an image not given as base64 data") {
		t.Errorf("skip reason %q", got)
	}
}
