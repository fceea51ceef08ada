package route

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// Provider builds the upstream HTTP request of one attempt for a backend's
// wire format and credentials.
type Provider interface {
	// NewRequest returns the request to send upstream for r, naming the
	// backend's model or deployment model (never empty: the member's model,
	// or the client's when the member renames nothing). Each call must
	// return a request with its own body reader.
	NewRequest(ctx context.Context, r *Request, model string) (*http.Request, error)
}

// OpenAI is a backend that speaks the OpenAI API with a Bearer key: OpenAI
// itself or any OpenAI-compatible server. It is safe for concurrent use.
type OpenAI struct {
	// BaseURL is the API root that operation paths are appended to, such
	// as https://api.openai.com/v1.
	BaseURL *url.URL
	// APIKey is sent as "Authorization: Bearer". Empty sends no key.
	APIKey string
	// Header is added to every request (for example OpenAI-Organization).
	// Optional.
	Header http.Header
}

var _ Provider = (*OpenAI)(nil)

// NewRequest implements Provider.
func (p *OpenAI) NewRequest(ctx context.Context, r *Request, model string) (*http.Request, error) {
	u := *p.BaseURL
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + string(r.Op)
	u.RawPath = ""
	req, err := newUpstream(ctx, &u, r, r.BodyFor(model), p.Header)
	if err != nil {
		return nil, err
	}
	if p.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.APIKey)
	}
	return req, nil
}

// Azure is an Azure OpenAI resource, called with the deployment in the path
// and an api-version query, or with the v1 API (APIVersion "v1") where the
// deployment is the body's model. It is safe for concurrent use.
type Azure struct {
	// Endpoint is the resource endpoint, such as
	// https://aoai-weu-prod.openai.azure.com.
	Endpoint *url.URL
	// APIKey is sent in the api-key header.
	APIKey string
	// APIVersion is the api-version query value. "v1" selects the
	// /openai/v1/ paths, which take no api-version.
	APIVersion string
	// Header is added to every request. Optional.
	Header http.Header
}

var _ Provider = (*Azure)(nil)

// NewRequest implements Provider.
func (p *Azure) NewRequest(ctx context.Context, r *Request, model string) (*http.Request, error) {
	u := *p.Endpoint
	base := strings.TrimSuffix(u.Path, "/")
	body := r.Body
	if p.APIVersion == "v1" {
		u.Path = base + "/openai/v1/" + string(r.Op)
		u.RawQuery = ""
		body = r.BodyFor(model)
	} else {
		u.Path = base + "/openai/deployments/" + model + "/" + string(r.Op)
		u.RawPath = base + "/openai/deployments/" + url.PathEscape(model) + "/" + string(r.Op)
		u.RawQuery = "api-version=" + url.QueryEscape(p.APIVersion)
	}
	req, err := newUpstream(ctx, &u, r, body, p.Header)
	if err != nil {
		return nil, err
	}
	if p.APIKey != "" {
		req.Header.Set("Api-Key", p.APIKey)
	}
	return req, nil
}

// newUpstream builds a POST with the client's forwardable headers, extra
// headers and its own reader over body.
func newUpstream(ctx context.Context, u *url.URL, r *Request, body []byte, extra http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	copyForwardable(req.Header, r.Header)
	for k, vv := range extra {
		req.Header[k] = append([]string(nil), vv...)
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.ContentLength = int64(len(body))
	return req, nil
}

// notForwarded are request headers that never go upstream: hop-by-hop
// headers (RFC 9110 section 7.6.1), the caller's credentials for the
// gateway, and headers the transport sets itself.
var notForwarded = map[string]bool{
	"Connection":          true,
	"Proxy-Connection":    true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
	"Host":                true,
	"Content-Length":      true,
	"Authorization":       true,
	"Api-Key":             true,
	"Cookie":              true,
}

func copyForwardable(dst, src http.Header) {
	var connTokens []string
	for _, v := range src["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				connTokens = append(connTokens, textproto.CanonicalMIMEHeaderKey(tok))
			}
		}
	}
outer:
	for k, vv := range src {
		if notForwarded[k] || strings.HasPrefix(k, "X-Switchover-") {
			continue
		}
		for _, t := range connTokens {
			if k == t {
				continue outer
			}
		}
		dst[k] = vv
	}
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
