package route

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/switchover-gw/switchover/translate"
)

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
	hb.set("Anthropic-Version", p.version())
	if p.APIKey != "" {
		hb.set("X-Api-Key", p.APIKey)
	}
	return req, nil
}

// version is the anthropic-version header the provider sends: Version, or
// 2023-06-01.
func (p *Anthropic) version() string {
	if p.Version == "" {
		return "2023-06-01"
	}
	return p.Version
}
