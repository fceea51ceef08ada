package route

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
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
	// ContentType is the body's media type; empty means application/json.
	ContentType string
	// Method, Path and RawQuery, when Path is set, are a call on an object
	// (Request.Path): Path is under the backend's API root, Method
	// defaults to POST. Their URLs are built per call, never cached.
	Method, Path, RawQuery string
	// AskedUsage is true when the gateway asked the backend for a stream's
	// usage chunk that the caller did not ask for: it is taken out of the
	// stream the caller gets.
	AskedUsage bool
}

// asksStreamUsage is implemented by providers whose streams the gateway
// may ask for their usage chunk (stream_options.include_usage): OpenAI's
// and Azure's, whose APIs take it. An OpenAI-compatible server may not.
type asksStreamUsage interface{ streamUsage() bool }

// supporter is implemented by providers that serve only some operations;
// the others are skipped for the request with an UnsupportedError.
type supporter interface {
	supports(op Operation) bool
}

// serves reports whether prov takes op in its own format.
func serves(prov Provider, op Operation) bool {
	if s, ok := prov.(supporter); ok {
		return s.supports(op)
	}
	return true
}

// wireFormat is the format of a call of op to prov: the provider's own,
// except that OpenAI-format backends take Responses calls in the
// Responses format.
func wireFormat(prov Provider, op Operation) translate.Format {
	f := prov.Format()
	if f == translate.OpenAI && op == Responses && serves(prov, Responses) {
		return translate.Responses
	}
	return f
}

// lookup returns o's target: from c, built once per key, for an
// operation; built for this call alone for an object path.
func (c *targets) lookup(o *Outgoing, base *url.URL, version, apiKey string, key targetKey, build func() *url.URL) (*target, error) {
	if o.Path != "" {
		u := build()
		u.RawQuery = o.RawQuery
		return newTarget(u, apiKey)
	}
	return c.get(base, version, apiKey, key, build)
}

// opPath is what o's URL path ends with: the object path, or the
// operation.
func (o *Outgoing) opPath() string {
	if o.Path != "" {
		return o.Path
	}
	return string(o.Op)
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
	// NoResponses says the server has no Responses API (some
	// OpenAI-compatible servers): Responses calls are translated to chat
	// completions for it. False means they are sent as they are.
	NoResponses bool
	// StreamUsage lets the gateway ask the server for a stream's usage
	// chunk (stream_options.include_usage) when the caller did not, to
	// count its tokens; the chunk is taken out of what the caller gets.
	// True for OpenAI's API; an OpenAI-compatible server may refuse the
	// option.
	StreamUsage bool

	targets targets // the request URL of each operation, built once
}

var _ Provider = (*OpenAI)(nil)

func (p *OpenAI) streamUsage() bool { return p.StreamUsage }

func (p *OpenAI) supports(op Operation) bool {
	switch op {
	case Messages, CountTokens:
		return false
	case Responses:
		return !p.NoResponses
	}
	return true
}

// Format implements Provider.
func (p *OpenAI) Format() translate.Format { return translate.OpenAI }

// NewRequest implements Provider.
func (p *OpenAI) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	t, err := p.targets.lookup(o, p.BaseURL, "", p.APIKey, targetKey{op: o.Op}, func() *url.URL {
		u := *p.BaseURL
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + o.opPath()
		u.RawPath = ""
		return &u
	})
	if err != nil {
		return nil, err
	}
	req, hb := newUpstream(ctx, t, o, p.Header, 3)
	p.setAccount(&hb)
	if p.APIKey != "" {
		hb.set("Authorization", t.bearer(p.APIKey))
	}
	return req, nil
}

// setAccount sets the organization and project headers.
func (p *OpenAI) setAccount(hb *headerBuf) {
	if p.Organization != "" {
		hb.set("Openai-Organization", p.Organization)
	}
	if p.Project != "" {
		hb.set("Openai-Project", p.Project)
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
	// NoResponses says the resource has no Responses API: Responses calls
	// are translated to chat completions for it. False means they go to
	// /openai/v1/responses with the deployment as the model.
	NoResponses bool

	lastToken atomic.Pointer[string] // the last token sent, for redaction
	targets   targets                // the request URL of each operation and deployment, built once
}

var _ Provider = (*Azure)(nil)

// Format implements Provider.
func (p *Azure) Format() translate.Format { return translate.OpenAI }

// ignoresBodyModel reports that the deployment in the path, not the
// body's model, picks the model for op, so the body need not be
// rewritten. Calls outside the deployment paths (Responses) go to the v1
// API, where the body's model names the deployment.
func (p *Azure) ignoresBodyModel(op Operation) bool { return p.inDeploymentPath(op) }

func (p *Azure) inDeploymentPath(op Operation) bool {
	return p.APIVersion != "v1" && op.deploymentPath()
}

// streamUsage: Azure's API versions since 2024-09-01-preview take
// stream_options (the default, 2024-10-21, does; so does the v1 API); an
// older one would refuse the call.
func (p *Azure) streamUsage() bool { return p.APIVersion == "v1" || p.APIVersion >= "2024-09-01" }

func (p *Azure) supports(op Operation) bool {
	switch op {
	case Messages, CountTokens, Moderations: // Azure filters content itself; it has no moderations API
		return false
	case Responses:
		return !p.NoResponses
	}
	return true
}

// NewRequest implements Provider.
func (p *Azure) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	key := targetKey{op: o.Op}
	deployment := o.Path == "" && p.inDeploymentPath(o.Op)
	if deployment {
		key.model = o.Model // the deployment is in the path
	}
	t, err := p.targets.lookup(o, p.Endpoint, p.APIVersion, "", key, func() *url.URL {
		u := *p.Endpoint
		base := strings.TrimSuffix(u.Path, "/")
		if !deployment {
			u.Path = base + "/openai/v1/" + o.opPath()
			u.RawPath = ""
			u.RawQuery = ""
		} else {
			u.Path = base + "/openai/deployments/" + o.Model + "/" + string(o.Op)
			u.RawPath = base + "/openai/deployments/" + url.PathEscape(o.Model) + "/" + string(o.Op)
			u.RawQuery = "api-version=" + url.QueryEscape(p.APIVersion)
		}
		return &u
	})
	if err != nil {
		return nil, err
	}
	req, hb := newUpstream(ctx, t, o, p.Header, 1)
	switch {
	case p.Token != nil:
		tok, err := p.Token.Token(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrAuth, err)
		}
		if last := p.lastToken.Load(); last == nil || *last != tok {
			p.lastToken.Store(&tok)
		}
		hb.set("Authorization", "Bearer "+tok)
	case p.APIKey != "":
		hb.set("Api-Key", p.APIKey)
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

	targets targets // the request URL, built once
}

var _ Provider = (*Anthropic)(nil)

func (p *Anthropic) supports(op Operation) bool { return op == Messages || op == CountTokens }

// Format implements Provider.
func (p *Anthropic) Format() translate.Format { return translate.Anthropic }

// NewRequest implements Provider.
func (p *Anthropic) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	op := o.Op
	if op != CountTokens {
		op = Messages
	}
	t, err := p.targets.lookup(o, p.BaseURL, "", "", targetKey{op: op}, func() *url.URL {
		u := *p.BaseURL
		path := string(op)
		if o.Path != "" {
			path = o.Path
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/" + path
		u.RawPath = ""
		return &u
	})
	if err != nil {
		return nil, err
	}
	req, hb := newUpstream(ctx, t, o, p.Header, 2)
	v := p.Version
	if v == "" {
		v = "2023-06-01"
	}
	hb.set("Anthropic-Version", v)
	if p.APIKey != "" {
		hb.set("X-Api-Key", p.APIKey)
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

	targets targets // the request URL of each model and method, built once
}

var _ Provider = (*Gemini)(nil)

// Format implements Provider.
func (p *Gemini) Format() translate.Format { return translate.Gemini }

func (p *Gemini) supports(op Operation) bool { return op == ChatCompletions }

// NewRequest implements Provider.
func (p *Gemini) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	v := p.APIVersion
	if v == "" {
		v = "v1beta"
	}
	method := ":generateContent"
	if o.Stream {
		method = ":streamGenerateContent"
	}
	t, err := p.targets.get(p.BaseURL, v, "", targetKey{op: Operation(method), model: o.Model}, func() *url.URL {
		u := *p.BaseURL
		u.RawQuery = ""
		if o.Stream {
			u.RawQuery = "alt=sse"
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + v + "/models/" + o.Model + method
		u.RawPath = ""
		return &u
	})
	if err != nil {
		return nil, err
	}
	req, hb := newUpstream(ctx, t, o, p.Header, 1)
	if p.APIKey != "" {
		hb.set("X-Goog-Api-Key", p.APIKey)
	}
	return req, nil
}

// newUpstream builds a POST to t with the caller's forwarded headers
// (o.Header, see forwardHeaders), the backend's extra headers, a
// Content-Type and its own reader over o.Body. An extra header replaces
// the caller's of the same name, except Anthropic-Beta, whose values add
// up: the backend's first. The provider sets up to own more headers of
// its own through the returned headerBuf, whose values share one backing
// array with the rest.
//
// It builds what http.NewRequestWithContext would from t's URL string,
// without printing and parsing that URL again on every attempt.
func newUpstream(ctx context.Context, t *target, o *Outgoing, extra http.Header, own int) (*http.Request, headerBuf) {
	keys, vals := len(o.Header)+len(extra)+1+own, 1+own
	for _, vv := range o.Header {
		vals += len(vv)
	}
	for _, vv := range extra {
		vals += len(vv)
	}
	hb := headerBuf{h: make(http.Header, keys), vals: make([]string, 0, vals)}
	for k, vv := range o.Header {
		hb.setAll(k, vv)
	}
	for k, vv := range extra {
		k = textproto.CanonicalMIMEHeaderKey(k)
		if k == "Anthropic-Beta" {
			hb.setAll(k, vv, hb.h[k]...)
			continue
		}
		hb.setAll(k, vv)
	}
	switch {
	case o.ContentType != "":
		hb.set("Content-Type", o.ContentType)
	case len(o.Body) > 0 || o.Path == "":
		hb.set("Content-Type", "application/json")
	}

	// The URL and the body reader, in one allocation.
	reqOwn := &struct {
		u    url.URL
		body bytesBody
	}{u: *t.url}
	body := o.Body
	method := o.Method
	if method == "" {
		method = http.MethodPost
	}
	req := &http.Request{
		Method:        method,
		URL:           &reqOwn.u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        hb.h,
		Host:          t.host,
		ContentLength: int64(len(body)),
	}
	if len(body) == 0 {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	} else {
		reqOwn.body.Reset(body)
		req.Body = &reqOwn.body
		req.GetBody = func() (io.ReadCloser, error) { return newBytesBody(body), nil }
	}
	return req.WithContext(ctx), hb
}

// bytesBody is a request body over a byte slice: bytes.Reader with a
// Close, one allocation where io.NopCloser(bytes.NewReader(b)) takes two.
type bytesBody struct{ bytes.Reader }

func newBytesBody(b []byte) *bytesBody {
	r := new(bytesBody)
	r.Reset(b)
	return r
}

// Close implements io.Closer; it does nothing.
func (*bytesBody) Close() error { return nil }

// target is a request URL as http.NewRequest parses it: the URL and the
// request's Host. A provider builds it once per operation (see targets).
type target struct {
	url  *url.URL
	host string

	apiKey, bearerKey string // the key bearerKey was built from, and "Bearer "+apiKey
}

// newTarget parses u's string form as http.NewRequest would: the URL an
// attempt sends is exactly the one it sent when it built the string
// itself.
// apiKey, if set, is the key whose bearer header it keeps.
func newTarget(u *url.URL, apiKey string) (*target, error) {
	req, err := http.NewRequest(http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, err
	}
	t := &target{url: req.URL, host: req.Host}
	if apiKey != "" {
		t.apiKey, t.bearerKey = apiKey, "Bearer "+apiKey
	}
	return t, nil
}

// bearer returns "Bearer "+key, built once for the key the target was
// first asked for.
func (t *target) bearer(key string) string {
	if t.bearerKey != "" && t.apiKey == key {
		return t.bearerKey
	}
	return "Bearer " + key
}

// targetKey names a cached target: the operation, and for an Azure
// deployment path the deployment.
type targetKey struct {
	op    Operation
	model string
}

// maxTargets bounds a provider's cached targets; past it, targets are
// built per request as before.
const maxTargets = 64

// targets caches a provider's request URLs, so that an attempt neither
// builds nor parses its URL. The cache belongs to one base URL (by
// pointer) and API version: a provider given a new base URL or version
// starts a new cache. It is safe for concurrent use; lookups take no lock.
type targets struct {
	mu sync.Mutex
	m  atomic.Pointer[targetMap]
}

type targetMap struct {
	base    *url.URL
	version string
	m       map[targetKey]*target
}

// get returns the target for key under base and version, building its
// URL with build the first time, and keeping the bearer header of apiKey.
func (c *targets) get(base *url.URL, version, apiKey string, key targetKey, build func() *url.URL) (*target, error) {
	if tm := c.m.Load(); tm != nil && tm.base == base && tm.version == version {
		if t, ok := tm.m[key]; ok {
			return t, nil
		}
	}
	t, err := newTarget(build(), apiKey)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil && (old.base != base || old.version != version) {
		old = nil
	}
	if old != nil && len(old.m) >= maxTargets {
		return t, nil
	}
	next := &targetMap{base: base, version: version, m: make(map[targetKey]*target, 1)}
	if old != nil {
		maps.Copy(next.m, old.m)
	}
	next.m[key] = t
	c.m.Store(next)
	return t, nil
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
