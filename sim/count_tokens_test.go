package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

func TestCountTokensThroughSDK(t *testing.T) {
	s := startSim(t, oneAnthropic(nil))
	ep := s.Deployments()[0]
	client := anthropicClient(ep)
	prompt := strings.Repeat("abcd", 25) // 100 characters: 25 tokens
	got, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model:    ep.Deployment,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	})
	if err != nil || got.InputTokens != 25 {
		t.Errorf("CountTokens = %v %+v, want 25", err, got)
	}
	tests := []struct {
		name       string
		body       string
		hdr        map[string]string
		wantStatus int
		wantBody   string
	}{
		{"other model", `{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders(""), 404, "not_found_error"},
		{"no version", `{"model":"claude-test","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"X-Api-Key": "k"}, 400, "anthropic-version"},
		{"no messages", `{"model":"claude-test"}`, anthropicHeaders(""), 400, "messages"},
		{"wrong method", "", anthropicHeaders(""), 405, "Method Not Allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := "POST"
			if tc.wantStatus == 405 {
				method = "GET"
			}
			resp, b := do(t, method, ep.URL+"/v1/messages/count_tokens", tc.body, tc.hdr)
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
		})
	}
}
