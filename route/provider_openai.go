package route

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/switchover-gw/switchover/translate"
)

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
	// Unsupported are operations the server does not serve (a hosted
	// service's gaps, config's presets): its members are skipped for them
	// as unsupported. Nil means it serves all but Anthropic's.
	Unsupported []Operation
	// Service names the server in reasons and reports (a preset's name,
	// such as groq). Empty means "openai".
	Service string

	targets targets // the request URL of each operation, built once
}

var _ Provider = (*OpenAI)(nil)

func (p *OpenAI) streamUsage() bool { return p.StreamUsage }

func (p *OpenAI) supports(op Operation) bool {
	if slices.Contains(p.Unsupported, op) {
		return false
	}
	switch op {
	case Messages, CountTokens:
		return false
	case Responses, ResponsesCompact:
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
