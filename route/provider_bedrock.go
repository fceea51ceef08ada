package route

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchover-gw/switchover/translate"
)

// RequestSigner signs an upstream request whose body is body, such as
// AWS Signature Version 4 (package awsauth). Implementations fetch and
// refresh their credentials and must be safe for concurrent use.
type RequestSigner interface {
	Sign(ctx context.Context, req *http.Request, body []byte) error
}

// Bedrock API choices (Bedrock.API).
const (
	BedrockConverse = "converse"
	BedrockInvoke   = "invoke"
)

// Bedrock is Amazon Bedrock's runtime API. It speaks Anthropic's format
// to the engine: requests in any inbound format are translated to
// Anthropic's Messages first, then to a Converse request (API
// "converse", any Bedrock chat model) or sent as Claude's native body to
// InvokeModel (API "invoke"); answers, streams (AWS event-stream
// framing) and errors come back as Anthropic's. It is safe for
// concurrent use.
type Bedrock struct {
	// Endpoint is the runtime API root. Nil means
	// https://bedrock-runtime.<Region>.amazonaws.com.
	Endpoint *url.URL
	// Region is the AWS region, such as us-east-1. Required.
	Region string
	// API is BedrockConverse (the default, for "") or BedrockInvoke.
	API string
	// Signer signs each request (SigV4). Nil sends requests unsigned,
	// which only a test server takes.
	Signer RequestSigner
	// Header is added to every request.
	Header http.Header
}

var _ Provider = (*Bedrock)(nil)

// Format implements Provider.
func (p *Bedrock) Format() translate.Format { return translate.Anthropic }

func (p *Bedrock) supports(op Operation) bool { return op == Messages }

// ignoresBodyModel: the URL names the model (/model/{modelId}/…).
func (p *Bedrock) ignoresBodyModel(Operation) bool { return true }

// endpoint is the API root requests go to.
func (p *Bedrock) endpoint() url.URL {
	if p.Endpoint != nil {
		return *p.Endpoint
	}
	return url.URL{Scheme: "https", Host: "bedrock-runtime." + p.Region + ".amazonaws.com"}
}

// bedrockAction is the last path segment of a call.
func (p *Bedrock) action(stream bool) string {
	switch {
	case p.API == BedrockInvoke && stream:
		return "invoke-with-response-stream"
	case p.API == BedrockInvoke:
		return "invoke"
	case stream:
		return "converse-stream"
	}
	return "converse"
}

// rewriter is implemented by providers whose wire body is not their
// Format's (Bedrock's Converse): rewrite replaces o.Body, prepared in the
// Format, with the body sent. An UnsupportedError skips the member for
// the request, with its reason.
type rewriter interface {
	rewrite(o *Outgoing) error
}

// rewrite is o's body for prov's wire.
func rewrite(prov Provider, o *Outgoing) error {
	if rw, ok := prov.(rewriter); ok {
		return rw.rewrite(o)
	}
	return nil
}

// rewrite makes o's Anthropic Messages body a Converse request, or
// InvokeModel's body for Claude.
func (p *Bedrock) rewrite(o *Outgoing) error {
	var body []byte
	var err error
	if p.API == BedrockInvoke {
		betas := append(p.Header.Values("Anthropic-Beta"), o.forwardedValues("Anthropic-Beta")...)
		body, err = translate.AnthropicToInvoke(o.Body, splitBetas(betas))
	} else {
		body, err = translate.AnthropicToConverse(o.Body)
	}
	if err != nil {
		return err
	}
	o.Body = body
	return nil
}

// NewRequest implements Provider. o.Body is the wire body already
// (rewrite).
func (p *Bedrock) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	body := o.Body
	u := p.endpoint()
	base := strings.TrimSuffix(u.Path, "/")
	action := p.action(o.Stream)
	u.Path = base + "/model/" + o.Model + "/" + action
	u.RawPath = base + "/model/" + awsEscape(o.Model) + "/" + action
	u.RawQuery = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	for k, v := range p.Header {
		if k != "Anthropic-Beta" {
			req.Header[k] = v
		}
	}
	req.Header.Set("Content-Type", "application/json")
	accept := "application/json"
	if o.Stream {
		accept = "application/vnd.amazon.eventstream"
	}
	req.Header.Set("Accept", accept)
	if p.Signer != nil {
		if err := p.Signer.Sign(ctx, req, body); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrAuth, err)
		}
	}
	return req, nil
}

// splitBetas splits comma-separated anthropic-beta values.
func splitBetas(vv []string) []string {
	var out []string
	for _, v := range vv {
		for b := range strings.SplitSeq(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	}
	return out
}

// awsEscape escapes a model ID or ARN for a path segment as the AWS SDKs
// do: every byte but the unreserved ones (the ':' of a model version and
// the '/' of an ARN included).
func awsEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// responseAdapter is implemented by providers that reach their Format
// through another wire format (Bedrock): adaptResponse turns the
// upstream answer to o into the Format's before the engine reads it.
type responseAdapter interface {
	adaptResponse(o *Outgoing, resp *http.Response) *http.Response
}

// adapted is resp in prov's Format.
func adapted(prov Provider, o *Outgoing, resp *http.Response) *http.Response {
	if a, ok := prov.(responseAdapter); ok {
		return a.adaptResponse(o, resp)
	}
	return resp
}

// maxBedrockAnswer bounds a non-streaming Converse answer read to be
// translated.
const maxBedrockAnswer = 32 << 20

// adaptResponse makes Bedrock's answer Anthropic's: an error (named by
// x-amzn-ErrorType) becomes Anthropic's error body with the status the
// breaker should see (see translate.BedrockError), a Converse answer a
// Messages answer, a stream an SSE stream. InvokeModel's plain answer is
// Anthropic's already.
func (p *Bedrock) adaptResponse(o *Outgoing, resp *http.Response) *http.Response {
	if resp.StatusCode/100 != 2 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		status, body := translate.BedrockError(resp.Header.Get("X-Amzn-Errortype"), resp.StatusCode, raw)
		return replaceBody(resp, status, "application/json", body)
	}
	id := "msg_bdrk_" + resp.Header.Get("X-Amzn-Requestid")
	switch {
	case o.Stream && p.API == BedrockInvoke:
		return streamBody(resp, translate.InvokeStreamToAnthropic(resp.Body))
	case o.Stream:
		return streamBody(resp, translate.ConverseStreamToAnthropic(resp.Body, o.Model, id))
	case p.API == BedrockInvoke:
		return resp
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBedrockAnswer))
	resp.Body.Close()
	body, terr := translate.ConverseToAnthropic(raw, o.Model, id)
	if err != nil || terr != nil {
		// Read as a transport failure would be: the backend's fault.
		_, body = translate.BedrockError("InternalServerException", 502, []byte(`{"message":"the Converse answer could not be read"}`))
		return replaceBody(resp, http.StatusBadGateway, "application/json", body)
	}
	return replaceBody(resp, resp.StatusCode, "application/json", body)
}

// replaceBody gives resp a new status and body.
func replaceBody(resp *http.Response, status int, contentType string, body []byte) *http.Response {
	resp.StatusCode = status
	resp.Status = strconv.Itoa(status) + " " + http.StatusText(status)
	resp.Header.Set("Content-Type", contentType)
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}

// streamBody makes resp an SSE stream read from body.
func streamBody(resp *http.Response, body io.ReadCloser) *http.Response {
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Body = body
	return resp
}
