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
	case Responses, ResponsesCompact:
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
