package route

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/switchover-gw/switchover/translate"
)

// Gemini is Google's Generative Language API (generateContent,
// streamGenerateContent and, for a Gemini client, countTokens). It is safe for concurrent use.
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

func (p *Gemini) supports(op Operation) bool { return op == ChatCompletions || op == GeminiCountTokens }

// ignoresBodyModel: the URL names Gemini's model (models/{model}:…), so a
// Gemini client's body, passed through, is sent as it came.
func (p *Gemini) ignoresBodyModel(Operation) bool { return true }

// NewRequest implements Provider.
func (p *Gemini) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	v := p.APIVersion
	if v == "" {
		v = "v1beta"
	}
	method := ":generateContent"
	switch {
	case o.Op == GeminiCountTokens:
		method = ":countTokens"
	case o.Stream:
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
