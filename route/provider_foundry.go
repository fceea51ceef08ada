package route

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/switchover-gw/switchover/translate"
)

// DefaultFoundryAPIVersion is the api-version of the Azure AI model
// inference API that Foundry's /models endpoint serves.
const DefaultFoundryAPIVersion = "2024-05-01-preview"

// Foundry is an Azure AI Foundry resource serving models other than
// OpenAI's (Llama, Mistral, DeepSeek, Phi…) through the Azure AI model
// inference API: POST {Endpoint}/chat/completions?api-version=… with the
// deployment as the body's model, in OpenAI's wire format. It serves chat
// completions and embeddings only. It is safe for concurrent use.
type Foundry struct {
	// Endpoint is the inference root, such as
	// https://NAME.services.ai.azure.com/models (a resource's root given
	// without a path gets /models), or a serverless endpoint's root.
	Endpoint *url.URL
	// APIKey is sent in the api-key header when Token is nil.
	APIKey string
	// Token, if set, supplies Microsoft Entra ID tokens, sent as
	// "Authorization: Bearer" instead of the api-key header.
	Token TokenSource
	// APIVersion is the api-version query value. Empty means
	// DefaultFoundryAPIVersion.
	APIVersion string
	// ExtraParameters, if set, is sent as the extra-parameters header:
	// what the service does with body fields its API does not define
	// ("pass-through" to the model, "drop" them, or "error", the
	// service's own default, a 400). Empty sends no header.
	ExtraParameters string
	// Header is added to every request. Optional.
	Header http.Header

	lastToken atomic.Pointer[string] // the last token sent, for redaction
	targets   targets                // the request URL of each operation, built once
}

var _ Provider = (*Foundry)(nil)

// Format implements Provider.
func (p *Foundry) Format() translate.Format { return translate.OpenAI }

// supports: the model inference API has chat completions and embeddings
// (and image embeddings, which the gateway does not route); every other
// operation is skipped as unsupported, and Responses calls are translated
// to chat completions.
func (p *Foundry) supports(op Operation) bool {
	return op == ChatCompletions || op == Embeddings
}

func (p *Foundry) apiVersion() string {
	if p.APIVersion == "" {
		return DefaultFoundryAPIVersion
	}
	return p.APIVersion
}

// root is the inference root's path: the endpoint's, or /models for a
// resource endpoint given without one.
func (p *Foundry) root() string {
	base := strings.TrimSuffix(p.Endpoint.Path, "/")
	if base == "" && strings.HasSuffix(p.Endpoint.Hostname(), ".services.ai.azure.com") {
		return "/models"
	}
	return base
}

// NewRequest implements Provider.
func (p *Foundry) NewRequest(ctx context.Context, o *Outgoing) (*http.Request, error) {
	t, err := p.targets.lookup(o, p.Endpoint, p.apiVersion(), "", targetKey{op: o.Op}, func() *url.URL {
		u := *p.Endpoint
		u.Path = p.root() + "/" + o.opPath()
		u.RawPath = ""
		u.RawQuery = "api-version=" + url.QueryEscape(p.apiVersion())
		return &u
	})
	if err != nil {
		return nil, err
	}
	req, hb := newUpstream(ctx, t, o, p.Header, 2)
	if p.ExtraParameters != "" {
		hb.set("Extra-Parameters", p.ExtraParameters)
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
		hb.set("Authorization", "Bearer "+tok)
	case p.APIKey != "":
		hb.set("Api-Key", p.APIKey)
	}
	return req, nil
}

// Credentials returns the secrets p sends, for redaction: its key and the
// last Entra ID token it sent.
func (p *Foundry) Credentials() []string {
	c := []string{p.APIKey}
	if tok := p.lastToken.Load(); tok != nil {
		c = append(c, *tok)
	}
	return c
}
