package route

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"net/url"

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
	// headers and credentials. For this package's own providers it is nil
	// and they take the same headers from the caller's directly.
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

	// fwd, for this package's providers, is the caller's whole header,
	// whose forwarded part (forwardHeaders, for a backend of format
	// fwdFormat) newUpstream copies straight into the upstream request:
	// Header is then nil, and the forwarded headers are copied once, not
	// twice (see forwardedInto).
	fwd       http.Header
	fwdFormat translate.Format
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

// kindOf names prov's kind in messages: "azure", "openai", "anthropic" or
// "gemini" for this package's providers, another provider by its wire
// format. An Azure backend speaks OpenAI's format but is not OpenAI: a
// reason that names the backend's kind must say which.
func kindOf(prov Provider) string {
	switch p := prov.(type) {
	case *Azure:
		return "azure"
	case *OpenAI:
		if p.Service != "" {
			return p.Service
		}
		return "openai"
	case *Anthropic:
		return "anthropic"
	case *Gemini:
		return "gemini"
	case *Vertex:
		return "vertex"
	case *Foundry:
		return "foundry"
	case *Bedrock:
		return "bedrock"
	}
	return string(prov.Format())
}

// skipReason is why a member whose provider is prov was skipped for a
// request it cannot honour (ue): its kind, the feature, and the cause when
// it is the model rather than the kind.
func skipReason(prov Provider, ue *translate.UnsupportedError) string {
	s := kindOf(prov) + " cannot honour " + ue.Feature
	if ue.Cause != "" {
		s += ": " + ue.Cause
	}
	return s
}

// serves reports whether prov takes op in its own format.
func serves(prov Provider, op Operation) bool {
	if s, ok := prov.(supporter); ok {
		return s.supports(op)
	}
	return true
}

// wireFormat is the format of a call of op to prov: the provider's own,
// except that OpenAI-format backends take Responses calls (and their
// compaction) in the Responses format.
func wireFormat(prov Provider, op Operation) translate.Format {
	f := prov.Format()
	if f == translate.OpenAI && (op == Responses || op == ResponsesCompact) && serves(prov, op) {
		return translate.Responses
	}
	return f
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
	fk, fv := o.forwardedCount()
	keys, vals := fk+len(extra)+1+own, fv+1+own
	for _, vv := range extra {
		vals += len(vv)
	}
	// The URL, the body reader and, for a usual header set, the header
	// values, in one allocation.
	reqOwn := &struct {
		u    url.URL
		body bytes.Reader
		vals [8]string
	}{u: *t.url}
	hb := headerBuf{h: make(http.Header, keys)}
	if vals <= len(reqOwn.vals) {
		hb.vals = reqOwn.vals[:0]
	} else {
		hb.vals = make([]string, 0, vals)
	}
	o.forwardedInto(&hb)
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
		// The body must be an io.NopCloser around a *bytes.Reader: for a
		// body of any other type, net/http flushes the headers before
		// writing it (transferWriter.FlushHeaders, unless the body
		// passes isKnownInMemoryReader), so a small request would leave
		// in two writes, two TCP segments, instead of one.
		reqOwn.body.Reset(body)
		req.Body = io.NopCloser(&reqOwn.body)
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return req.WithContext(ctx), hb
}

// bytesBody is a body over a byte slice: bytes.Reader with a Close, one
// allocation where io.NopCloser(bytes.NewReader(b)) takes two. It serves
// response bodies; not upstream request bodies, which net/http would not
// recognise as in memory (see newUpstream).
type bytesBody struct{ bytes.Reader }

func newBytesBody(b []byte) *bytesBody {
	r := new(bytesBody)
	r.Reset(b)
	return r
}

// Close implements io.Closer; it does nothing.
func (*bytesBody) Close() error { return nil }

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
	case *Vertex:
		if tok := p.lastToken.Load(); tok != nil {
			dst = append(dst, *tok)
		}
		return dst
	case interface{ Credentials() []string }:
		return append(dst, p.Credentials()...)
	}
	return dst
}
