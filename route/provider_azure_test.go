package route

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// TestAzureStreamUsageOnlyWhereTheAPITakesIt: stream_options is asked of
// Azure only on API versions that take it.
func TestAzureStreamUsageOnlyWhereTheAPITakesIt(t *testing.T) {
	for v, want := range map[string]bool{"2024-10-21": true, "2024-09-01-preview": true, "2025-04-01-preview": true, "v1": true, "2024-06-01": false, "2024-02-15-preview": false} {
		if got := (&Azure{APIVersion: v}).streamUsage(); got != want {
			t.Errorf("api-version %s: asks %v, want %v", v, got, want)
		}
	}
}

// TestAzureRequest: a deployment path with the api-version, the v1 API
// with the deployment as the body's model, Responses on the v1 API, the
// api-key header, or an Entra ID token as Bearer (remembered for
// redaction).
func TestAzureRequest(t *testing.T) {
	base := parseURL(t, "https://aoai-weu.openai.azure.com")
	tests := []struct {
		name    string
		p       *Azure
		o       Outgoing
		wantURL string
		want    http.Header
	}{
		{"deployment path", &Azure{Endpoint: base, APIKey: "az-1", APIVersion: "2024-10-21"},
			Outgoing{Op: ChatCompletions, Model: "gpt-4o weu", Body: []byte(`{}`)},
			"https://aoai-weu.openai.azure.com/openai/deployments/gpt-4o%20weu/chat/completions?api-version=2024-10-21",
			http.Header{"Api-Key": {"az-1"}, "Authorization": nil}},
		{"v1", &Azure{Endpoint: base, APIKey: "az-1", APIVersion: "v1"},
			Outgoing{Op: ChatCompletions, Model: "gpt-4o", Body: []byte(`{}`)},
			"https://aoai-weu.openai.azure.com/openai/v1/chat/completions",
			http.Header{"Api-Key": {"az-1"}}},
		{"responses on the v1 API", &Azure{Endpoint: base, APIKey: "az-1", APIVersion: "2024-10-21"},
			Outgoing{Op: Responses, Model: "gpt-4o", Body: []byte(`{}`)},
			"https://aoai-weu.openai.azure.com/openai/v1/responses",
			http.Header{"Api-Key": {"az-1"}}},
		{"entra token", &Azure{Endpoint: base, APIKey: "unused", Token: fixedToken("tok-1"), APIVersion: "2024-10-21"},
			Outgoing{Op: Embeddings, Model: "emb", Body: []byte(`{}`)},
			"https://aoai-weu.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-10-21",
			http.Header{"Authorization": {"Bearer tok-1"}, "Api-Key": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRequest(t, sent(t, tc.p, &tc.o), http.MethodPost, tc.wantURL, tc.want)
			if tc.p.Token != nil {
				if last := tc.p.lastToken.Load(); last == nil || *last != "tok-1" {
					t.Errorf("last token %v, want tok-1", last)
				}
			}
		})
	}
}

// TestAzureTokenFailureIsErrAuth: no token, no call: the error wraps
// ErrAuth, so that another backend may serve.
func TestAzureTokenFailureIsErrAuth(t *testing.T) {
	p := &Azure{Endpoint: parseURL(t, "https://aoai-weu.openai.azure.com"), Token: failingToken{}, APIVersion: "2024-10-21"}
	_, err := p.NewRequest(t.Context(), &Outgoing{Op: ChatCompletions, Model: "gpt-4o", Body: []byte(`{}`)})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("err %v, want ErrAuth", err)
	}
}

type fixedToken string

func (f fixedToken) Token(context.Context) (string, error) { return string(f), nil }
