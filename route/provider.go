package route

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/switchover-gw/switchover/translate"
)

// Provider builds the upstream HTTP request of one attempt for a backend's
// wire format and credentials.
type Provider interface {
	// Format is the wire format the backend speaks. The engine translates
	// chat requests and responses between it and the client's format.
	Format() translate.Format
	// NewRequest returns the request to send upstream. Each call must
	// return a request with its own body reader.
	NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error)
}

// Outgoing is one attempt's request, already in the backend's format.
type Outgoing struct {
	// Op is the operation: ChatCompletions, Completions or Embeddings for
	// OpenAI-format backends, Messages for Anthropic ones, ChatCompletions
	// for Gemini ones.
	Op Operation
	// Body is the request body in the backend's format, with the model set
	// where the format puts it in the body.
	Body []byte
	// Model is the backend's model or deployment name (never empty).
	Model string
	// Stream is true for a streaming request.
	Stream bool
	// Header holds the caller's headers that may go upstream (see
	// forwardHeaders in headers.go); providers send them and add their own
	// headers and credentials.
	Header http.Header
}

// TokenSource supplies bearer tokens, such as Microsoft Entra ID tokens
// for Azure OpenAI. Implementations cache and refresh tokens and must be
// safe for concurrent use.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// ErrAuth wraps a failure to obtain a backend credential (a token).
var ErrAuth = errors.New("switchover: backend credential unavailable")

// OpenAI is a backend that speaks the OpenAI API with a Bearer key: OpenAI
// itself or any OpenAI-compatible server. It is safe for concurrent use.
type OpenAI struct {
	// BaseURL is the API root that operation paths are appended to, such
	// as https://api.openai.com/v1.
	BaseURL *url.URL
	// APIKey is sent as "Authorization: Bearer". Empty sends no key.
	APIKey string
	// Organization and Project, if set, are sent as OpenAI-Organization
	// and OpenAI-Project: which of the key's organizations and projects the
	// call is billed to. Optional; a caller can never set them.
	Organization, Project string
	// Header is added to every request. Optional.
	Header http.Header
}

var _ Provider = (*OpenAI)(nil)

// Format implements Provider.
func (p *OpenAI) Format() translate.Format { return translate.OpenAI }

// NewRequest implements Provider.
func (p *OpenAI) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	u := *p.BaseURL
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + string(o.Op)
	u.RawPath = ""
	req, err := newUpstream(ctx, &u, o, p.Header)
	if err != nil {
		return nil, err
	}
	p.setAccount(req.Header)
	if p.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.APIKey)
	}
	return req, nil
}

// setAccount sets the organization and project headers.
func (p *OpenAI) setAccount(h http.Header) {
	if p.Organization != "" {
		h.Set("OpenAI-Organization", p.Organization)
	}
	if p.Project != "" {
		h.Set("OpenAI-Project", p.Project)
	}
}

// Azure is an Azure OpenAI resource, called with the deployment in the path
// and an api-version query, or with the v1 API (APIVersion "v1") where the
// deployment is the body's model. It is safe for concurrent use.
type Azure struct {
	// Endpoint is the resource endpoint, such as
	// https://aoai-weu-prod.openai.azure.com.
	Endpoint *url.URL
	// APIKey is sent in the api-key header when Token is nil.
	APIKey string
	// Token, if set, supplies Microsoft Entra ID tokens, sent as
	// "Authorization: Bearer" instead of the api-key header.
	Token TokenSource
	// APIVersion is the api-version query value. "v1" selects the
	// /openai/v1/ paths, which take no api-version.
	APIVersion string
	// Header is added to every request. Optional.
	Header http.Header

	lastToken atomic.Pointer[string] // the last token sent, for redaction
}

var _ Provider = (*Azure)(nil)

// Format implements Provider.
func (p *Azure) Format() translate.Format { return translate.OpenAI }

// ignoresBodyModel reports that the deployment in the path, not the
// body's model, picks the model, so the body need not be rewritten.
func (p *Azure) ignoresBodyModel() bool { return p.APIVersion != "v1" }

// NewRequest implements Provider.
func (p *Azure) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	u := *p.Endpoint
	base := strings.TrimSuffix(u.Path, "/")
	if p.APIVersion == "v1" {
		u.Path = base + "/openai/v1/" + string(o.Op)
		u.RawQuery = ""
	} else {
		u.Path = base + "/openai/deployments/" + o.Model + "/" + string(o.Op)
		u.RawPath = base + "/openai/deployments/" + url.PathEscape(o.Model) + "/" + string(o.Op)
		u.RawQuery = "api-version=" + url.QueryEscape(p.APIVersion)
	}
	req, err := newUpstream(ctx, &u, o, p.Header)
	if err != nil {
		return nil, err
	}
	switch {
	case p.Token != nil:
		tok, err := p.Token.Token(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrAuth, err)
		}
		if last := p.lastToken.Load(); last == nil || *last != tok {
			p.lastToken.Store(&tok)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	case p.APIKey != "":
		req.Header.Set("Api-Key", p.APIKey)
	}
	return req, nil
}

// Anthropic is the Anthropic Messages API. It is safe for concurrent use.
type Anthropic struct {
	// BaseURL is the API root, such as https://api.anthropic.com; the
	// gateway appends /v1/messages.
	BaseURL *url.URL
	// APIKey is sent in the x-api-key header.
	APIKey string
	// Version is the anthropic-version header. Default "2023-06-01".
	Version string
	// Header is added to every request (for example anthropic-beta).
	Header http.Header
}

var _ Provider = (*Anthropic)(nil)

// Format implements Provider.
func (p *Anthropic) Format() translate.Format { return translate.Anthropic }

// NewRequest implements Provider.
func (p *Anthropic) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	u := *p.BaseURL
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/messages"
	u.RawPath = ""
	req, err := newUpstream(ctx, &u, o, p.Header)
	if err != nil {
		return nil, err
	}
	v := p.Version
	if v == "" {
		v = "2023-06-01"
	}
	req.Header.Set("Anthropic-Version", v)
	if p.APIKey != "" {
		req.Header.Set("X-Api-Key", p.APIKey)
	}
	return req, nil
}

// Gemini is Google's Generative Language API (generateContent and
// streamGenerateContent). It is safe for concurrent use.
type Gemini struct {
	// BaseURL is the API root, such as
	// https://generativelanguage.googleapis.com.
	BaseURL *url.URL
	// APIKey is sent in the x-goog-api-key header.
	APIKey string
	// APIVersion is the path version. Default "v1beta".
	APIVersion string
	// Header is added to every request.
	Header http.Header
}

var _ Provider = (*Gemini)(nil)

// Format implements Provider.
func (p *Gemini) Format() translate.Format { return translate.Gemini }

// NewRequest implements Provider.
func (p *Gemini) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	u := *p.BaseURL
	v := p.APIVersion
	if v == "" {
		v = "v1beta"
	}
	method := ":generateContent"
	u.RawQuery = ""
	if o.Stream {
		method = ":streamGenerateContent"
		u.RawQuery = "alt=sse"
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + v + "/models/" + o.Model + method
	u.RawPath = ""
	req, err := newUpstream(ctx, &u, o, p.Header)
	if err != nil {
		return nil, err
	}
	if p.APIKey != "" {
		req.Header.Set("X-Goog-Api-Key", p.APIKey)
	}
	return req, nil
}

// newUpstream builds a POST with the caller's forwarded headers (o.Header,
// see forwardHeaders), the backend's extra headers and its own reader over
// body. An extra header replaces the caller's of the same name, except
// Anthropic-Beta, whose values add up: the backend's first.
func newUpstream(ctx context.Context, u *url.URL, o *Outgoing, extra http.Header) (*http.Request, error) {
	body := o.Body
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	for k, vv := range o.Header {
		req.Header[k] = append([]string(nil), vv...)
	}
	for k, vv := range extra {
		k = textproto.CanonicalMIMEHeaderKey(k)
		if k == "Anthropic-Beta" {
			req.Header[k] = append(append([]string(nil), vv...), req.Header[k]...)
			continue
		}
		req.Header[k] = append([]string(nil), vv...)
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(body))
	return req, nil
}

// hopHeaders are response headers a proxy must not pass on.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// RemoveHopHeaders deletes hop-by-hop headers, including those named by
// Connection, from a response header before it is passed on.
func RemoveHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				h.Del(tok)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// appendCredentials appends to dst the secrets a provider sends upstream,
// for redaction: its keys, and for Azure with Entra ID the last token it
// sent. A Provider of another type may list its own with a Credentials()
// []string method. Redaction runs on every relayed header, so the common
// providers append into the caller's (stack) buffer without allocating.
func appendCredentials(dst []string, p Provider) []string {
	switch p := p.(type) {
	case *OpenAI:
		return append(dst, p.APIKey)
	case *Azure:
		dst = append(dst, p.APIKey)
		if tok := p.lastToken.Load(); tok != nil {
			dst = append(dst, *tok)
		}
		return dst
	case *Anthropic:
		return append(dst, p.APIKey)
	case *Gemini:
		return append(dst, p.APIKey)
	case interface{ Credentials() []string }:
		return append(dst, p.Credentials()...)
	}
	return dst
}
