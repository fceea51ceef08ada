package sim

import (
	"context"
	"errors"
	"testing"

	"cloud.google.com/go/auth"
	"google.golang.org/genai"
)

// staticToken is an auth.TokenProvider of one token.
type staticToken string

func (s staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(s), Type: "Bearer"}, nil
}

// TestVertexWithGoogleSDK: Google's Gen AI SDK in Vertex AI mode, with an
// access token, reads the simulated Vertex Gemini's answers and stream,
// and gets its 429 as RESOURCE_EXHAUSTED.
func TestVertexWithGoogleSDK(t *testing.T) {
	g, _ := vertexSim(t, 12) // two requests per 10 s slice
	ctx := t.Context()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "my-proj", Location: "us-east5",
		Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken(vertexToken)}),
		HTTPOptions: genai.HTTPOptions{BaseURL: g.URL + "/", APIVersion: "v1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Models.GenerateContent(ctx, "gemini-2.5-pro", genai.Text("Hello"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() == "" || resp.UsageMetadata == nil || resp.UsageMetadata.CandidatesTokenCount == 0 {
		t.Fatalf("answer %+v", resp)
	}
	var text string
	for chunk, err := range c.Models.GenerateContentStream(ctx, "gemini-2.5-pro", genai.Text("Hello"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		text += chunk.Text()
	}
	if text == "" {
		t.Fatal("empty stream")
	}
	_, err = c.Models.GenerateContent(ctx, "gemini-2.5-pro", genai.Text("Hello"), nil)
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 429 || apiErr.Status != "RESOURCE_EXHAUSTED" {
		t.Fatalf("past the quota: %v", err)
	}
}
