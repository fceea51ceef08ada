package route

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ProbeKind is what a health probe asks a backend.
type ProbeKind string

// Probe kinds.
const (
	// ProbeChat sends a one-token chat completion in the backend's own
	// format: the path real requests take, at a few tokens of quota.
	ProbeChat ProbeKind = "chat"
	// ProbeModels lists the backend's models: no quota, but it says only
	// that the service answers, not that the deployment does.
	ProbeModels ProbeKind = "models"
	// ProbeStream is ProbeChat streamed: it passes once the first event
	// arrives, so it can tell a backend whose streams stall (headers, then
	// nothing) from one that answers.
	ProbeStream ProbeKind = "stream"
)

// probeBody is the chat probe: as small as a request can be.
const probeBody = `{"model":"","max_tokens":1,"messages":[{"role":"user","content":"ping"}]}`

// probeStreamBody is the stream probe.
const probeStreamBody = `{"model":"","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"ping"}]}`

// ProbeError is a failed probe: the result names it as a metric label
// would (a status class, or a failure reason).
type ProbeError struct {
	Result string
	Err    error
}

func (e *ProbeError) Error() string { return "probe: " + e.Result + ": " + e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }

// Probe checks the backend once, bypassing its breaker: kind says how;
// model is the model or deployment to ask for. It returns nil when the
// backend answered 2xx, or 400 or 422 (it refused the probe's own body,
// as reasoning deployments refuse max_tokens: it is up), or a *ProbeError
// whose Result is the status class ("429", "4xx", "5xx") or the reason
// there was no answer.
func (b *Backend) Probe(ctx context.Context, kind ProbeKind, model string) error {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Canceled)
	var req *http.Request
	var o *Outgoing
	var err error
	switch kind {
	case ProbeModels:
		req, err = modelsRequest(pctx, b.Provider)
	default:
		body := probeBody
		if kind == ProbeStream {
			body = probeStreamBody
		}
		r, _ := NewRequest(ChatCompletions, []byte(body), nil)
		if o, err = prepare(r, &Member{Backend: b, Deployment: model, MaxTokens: 1}); err == nil {
			req, err = b.Provider.NewRequest(pctx, o)
		}
	}
	if err != nil {
		return &ProbeError{Result: string(ReasonAuth), Err: err}
	}
	began := time.Now()
	resp, err := b.transport().RoundTrip(req)
	if err != nil {
		return &ProbeError{Result: string(errReason(ctx, pctx, err)), Err: errors.New(describeTransportError(errReason(ctx, pctx, err), err, b))}
	}
	if o != nil {
		resp = adapted(b.Provider, o, resp)
	}
	defer resp.Body.Close()
	if kind == ProbeStream && resp.StatusCode/100 == 2 {
		if !IsEventStream(resp.Header) {
			return &ProbeError{Result: string(ReasonInvalidResponse), Err: errors.New("the stream probe got no event stream")}
		}
		if err := firstEvent(bufio.NewReader(resp.Body)); err != nil {
			reason := errReason(ctx, pctx, err)
			return &ProbeError{Result: string(reason), Err: errors.New("the stream sent no event: " + describeTransportError(reason, err, b))}
		}
		b.lat.observeCheck(time.Since(began))
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if resp.StatusCode < 500 {
		// Any answer tells how fast the backend answers a tiny call, which
		// bounds the next check.
		b.lat.observeCheck(time.Since(began))
	}
	if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnprocessableEntity {
		// The backend refused the probe's own body (reasoning deployments
		// reject max_tokens, some models a one-token answer): it answered,
		// so it is up.
		return nil
	}
	if resp.StatusCode/100 != 2 {
		class := fmt.Sprintf("%dxx", resp.StatusCode/100)
		if resp.StatusCode == http.StatusTooManyRequests {
			class = "429"
		}
		return &ProbeError{Result: class, Err: fmt.Errorf("%d: %s", resp.StatusCode, b.redact(errorMessage(body)))}
	}
	return nil
}

// modelsRequest is the provider's list-models call.
func modelsRequest(ctx context.Context, p Provider) (*http.Request, error) {
	var u url.URL
	h := http.Header{}
	switch p := p.(type) {
	case *OpenAI:
		u = *p.BaseURL
		u.Path = strings.TrimSuffix(u.Path, "/") + "/models"
		p.setAccount(&headerBuf{h: h})
		if p.APIKey != "" {
			h.Set("Authorization", "Bearer "+p.APIKey)
		}
	case *Azure:
		u = *p.Endpoint
		u.Path = strings.TrimSuffix(u.Path, "/") + "/openai/models"
		u.RawQuery = "api-version=" + url.QueryEscape(p.APIVersion)
		if p.APIVersion == "v1" {
			u.Path = strings.TrimSuffix(p.Endpoint.Path, "/") + "/openai/v1/models"
			u.RawQuery = ""
		}
		if p.Token != nil {
			tok, err := p.Token.Token(ctx)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrAuth, err)
			}
			h.Set("Authorization", "Bearer "+tok)
		} else if p.APIKey != "" {
			h.Set("Api-Key", p.APIKey)
		}
	case *Anthropic:
		u = *p.BaseURL
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/models"
		h.Set("Anthropic-Version", p.version())
		if p.APIKey != "" {
			h.Set("X-Api-Key", p.APIKey)
		}
	case *Gemini:
		u = *p.BaseURL
		v := p.APIVersion
		if v == "" {
			v = "v1beta"
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + v + "/models"
		if p.APIKey != "" {
			h.Set("X-Goog-Api-Key", p.APIKey)
		}
	default:
		return nil, fmt.Errorf("no models call for %T", p)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	return req, nil
}
