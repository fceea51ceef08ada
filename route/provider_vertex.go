package route

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/switchover-gw/switchover/translate"
)

// Vertex publishers: the model families Vertex AI serves that switchover
// speaks to.
const (
	// PublisherGoogle is Gemini, through generateContent and
	// streamGenerateContent: Gemini's own wire format.
	PublisherGoogle = "google"
	// PublisherAnthropic is Claude, through rawPredict and
	// streamRawPredict: Anthropic's Messages format, with the model in the
	// path and anthropic_version in the body.
	PublisherAnthropic = "anthropic"
)

// VertexAnthropicVersion is the anthropic_version a Messages body sent to
// Claude on Vertex AI carries in place of its model.
const VertexAnthropicVersion = "vertex-2023-10-16"

// Vertex is Google Cloud's Vertex AI: Gemini models (publisher google)
// and Anthropic's Claude models (publisher anthropic) of one project and
// location, called with a Google OAuth 2.0 access token. It speaks
// Gemini's format for the first and Anthropic's for the second, so every
// inbound format reaches it through the existing translations. It is safe
// for concurrent use.
type Vertex struct {
	// BaseURL is the API root: https://LOCATION-aiplatform.googleapis.com
	// for a region, https://aiplatform.googleapis.com for the global
	// endpoint. The gateway appends /v1/projects/….
	BaseURL *url.URL
	// Project is the Google Cloud project ID; Location the region (such as
	// us-east5) or "global".
	Project, Location string
	// Publisher is PublisherGoogle or PublisherAnthropic; empty means
	// PublisherGoogle.
	Publisher string
	// Token supplies access tokens, sent as "Authorization: Bearer". Nil
	// sends none (a local test server).
	Token TokenSource
	// Header is added to every request. Optional.
	Header http.Header

	lastToken atomic.Pointer[string] // the last token sent, for redaction
	targets   targets                // the request URL of each model and method, built once
}

var _ Provider = (*Vertex)(nil)

func (p *Vertex) anthropic() bool { return p.Publisher == PublisherAnthropic }

// Format implements Provider: Anthropic's for Claude, Gemini's otherwise.
func (p *Vertex) Format() translate.Format {
	if p.anthropic() {
		return translate.Anthropic
	}
	return translate.Gemini
}

// supports: Claude's messages, or Gemini's generateContent and (for a
// Gemini client) countTokens. Claude's token counting
// (count-tokens:rawPredict) and embeddings are not served.
func (p *Vertex) supports(op Operation) bool {
	if p.anthropic() {
		return op == Messages
	}
	return op == ChatCompletions || op == GeminiCountTokens
}

// ignoresBodyModel: the URL names the model; Claude's body loses its model
// (vertexAnthropicBody), Gemini's never had one.
func (p *Vertex) ignoresBodyModel(Operation) bool { return true }

// NewRequest implements Provider.
func (p *Vertex) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	method := ":generateContent"
	switch {
	case p.anthropic() && o.Stream:
		method = ":streamRawPredict"
	case p.anthropic():
		method = ":rawPredict"
	case o.Op == GeminiCountTokens:
		method = ":countTokens"
	case o.Stream:
		method = ":streamGenerateContent"
	}
	publisher := PublisherGoogle
	if p.anthropic() {
		publisher = PublisherAnthropic
	}
	t, err := p.targets.get(p.BaseURL, "", "", targetKey{op: Operation(method), model: o.Model}, func() *url.URL {
		u := *p.BaseURL
		u.RawQuery = ""
		if o.Stream && !p.anthropic() {
			u.RawQuery = "alt=sse"
		}
		path := "/v1/projects/" + p.Project + "/locations/" + p.Location + "/publishers/" + publisher + "/models/"
		base := strings.TrimSuffix(u.Path, "/")
		u.Path = base + path + o.Model + method
		u.RawPath = base + path + url.PathEscape(o.Model) + method
		return &u
	})
	if err != nil {
		return nil, err
	}
	if p.anthropic() {
		body, err := vertexAnthropicBody(o.Body)
		if err != nil {
			return nil, err
		}
		oc := *o
		oc.Body = body
		o = &oc
	}
	req, hb := newUpstream(ctx, t, o, p.Header, 1)
	if p.Token != nil {
		tok, err := p.Token.Token(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrAuth, err)
		}
		if last := p.lastToken.Load(); last == nil || *last != tok {
			p.lastToken.Store(&tok)
		}
		hb.set("Authorization", "Bearer "+tok)
	}
	return req, nil
}

// vertexAnthropicBody is a Messages body as Claude on Vertex AI takes it:
// without its model (the URL names it) and with anthropic_version
// VertexAnthropicVersion unless the body sets one.
func vertexAnthropicBody(body []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadBody, err)
	}
	delete(m, "model")
	if _, ok := m["anthropic_version"]; !ok {
		m["anthropic_version"] = json.RawMessage(`"` + VertexAnthropicVersion + `"`)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadBody, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// errorFormat is the format of an error body from Vertex: Claude's own
// errors are Anthropic's ({"type":"error","error":{"type":…}}), but
// Vertex's front end answers quota, permission and not-found errors in
// Google's shape ({"error":{"code":429,"status":"RESOURCE_EXHAUSTED",…}},
// or a list of those from a stream), which is Gemini's.
func (p *Vertex) errorFormat(body []byte) translate.Format {
	if !p.anthropic() {
		return translate.Gemini
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		return translate.Gemini
	}
	var g struct {
		Error *struct {
			Code   json.RawMessage `json:"code"`
			Status json.RawMessage `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &g) == nil && g.Error != nil && (g.Error.Status != nil || g.Error.Code != nil) {
		return translate.Gemini
	}
	return translate.Anthropic
}
