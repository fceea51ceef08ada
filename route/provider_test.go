package route

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// sent is the request p builds for o, failing the test on an error.
func sent(t *testing.T, p Provider, o *Outgoing) *http.Request {
	t.Helper()
	req, err := p.NewRequest(t.Context(), o)
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	return req
}

func parseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// checkRequest compares what a provider built with what it should have.
func checkRequest(t *testing.T, req *http.Request, method, wantURL string, want http.Header) {
	t.Helper()
	if req.Method != method {
		t.Errorf("method %s, want %s", req.Method, method)
	}
	if got := req.URL.String(); got != wantURL {
		t.Errorf("URL %s, want %s", got, wantURL)
	}
	if req.Host != req.URL.Host {
		t.Errorf("Host %q, URL host %q", req.Host, req.URL.Host)
	}
	for k, vv := range want {
		if got := req.Header.Values(k); !slices.Equal(got, vv) {
			t.Errorf("%s = %q, want %q", k, got, vv)
		}
	}
}

// TestNewUpstreamHeadersAndBody: the caller's forwarded headers go up,
// a backend's extra header replaces the caller's of the same name except
// Anthropic-Beta, whose values add up with the backend's first; the body
// has its own reader on each GetBody.
func TestNewUpstreamHeadersAndBody(t *testing.T) {
	base := parseURL(t, "https://api.example.com/v1")
	p := &OpenAI{BaseURL: base, Header: http.Header{"x-team": {"backend"}, "anthropic-beta": {"backend-beta"}}}
	o := &Outgoing{Op: ChatCompletions, Model: "m", Body: []byte(`{"model":"m"}`), Header: http.Header{
		"X-Team": {"caller"}, "Anthropic-Beta": {"caller-beta"}, "X-Request-Id": {"req-1"},
	}}
	req := sent(t, p, o)
	checkRequest(t, req, http.MethodPost, "https://api.example.com/v1/chat/completions", http.Header{
		"X-Team":         {"backend"},
		"Anthropic-Beta": {"backend-beta", "caller-beta"},
		"X-Request-Id":   {"req-1"},
		"Content-Type":   {"application/json"},
		"Authorization":  nil,
	})
	if req.ContentLength != int64(len(o.Body)) {
		t.Errorf("ContentLength %d, want %d", req.ContentLength, len(o.Body))
	}
	for i := range 2 {
		rc, err := req.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(rc); string(b) != string(o.Body) {
			t.Errorf("GetBody %d read %q", i, b)
		}
	}
	if b, _ := io.ReadAll(req.Body); string(b) != string(o.Body) {
		t.Errorf("Body read %q", b)
	}
}

// TestNewUpstreamContentType: the body's own media type, else JSON for a
// body or an operation, none for an empty call on an object.
func TestNewUpstreamContentType(t *testing.T) {
	base := parseURL(t, "https://api.example.com/v1")
	tests := []struct {
		name string
		o    Outgoing
		want []string
	}{
		{"json body", Outgoing{Op: ChatCompletions, Body: []byte(`{}`)}, []string{"application/json"}},
		{"multipart", Outgoing{Op: AudioTranscriptions, Body: []byte("--x"), ContentType: "multipart/form-data; boundary=x"}, []string{"multipart/form-data; boundary=x"}},
		{"empty operation", Outgoing{Op: Embeddings}, []string{"application/json"}},
		{"empty object call", Outgoing{Method: http.MethodGet, Path: "files/file-1"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := sent(t, &OpenAI{BaseURL: base}, &tc.o)
			if got := req.Header.Values("Content-Type"); !slices.Equal(got, tc.want) {
				t.Errorf("Content-Type %q, want %q", got, tc.want)
			}
			if len(tc.o.Body) == 0 && req.Body != http.NoBody {
				t.Errorf("empty body is %T, want http.NoBody", req.Body)
			}
		})
	}
}

type credentialed struct{ OpenAI }

func (*credentialed) Credentials() []string { return []string{"own-1", "own-2"} }

// TestAppendCredentials lists each provider's secrets for redaction.
func TestAppendCredentials(t *testing.T) {
	tok := "entra-token"
	az := &Azure{APIKey: "az-key"}
	az.lastToken.Store(&tok)
	tests := []struct {
		name string
		p    Provider
		want []string
	}{
		{"openai", &OpenAI{APIKey: "sk-1"}, []string{"sk-1"}},
		{"azure key", &Azure{APIKey: "az-1"}, []string{"az-1"}},
		{"azure with the last token", az, []string{"az-key", "entra-token"}},
		{"anthropic", &Anthropic{APIKey: "ak-1"}, []string{"ak-1"}},
		{"gemini", &Gemini{APIKey: "gk-1"}, []string{"gk-1"}},
		{"own Credentials method", &credentialed{}, []string{"own-1", "own-2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := appendCredentials([]string{"first"}, tc.p); !slices.Equal(got, append([]string{"first"}, tc.want...)) {
				t.Errorf("appendCredentials = %q, want first then %q", got, tc.want)
			}
		})
	}
}

type failingToken struct{}

func (failingToken) Token(context.Context) (string, error) { return "", errors.New("no token") }
