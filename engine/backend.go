package engine

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/entra"
	"github.com/switchover-gw/switchover/route"
)

// transportKey is what makes two backends' transports interchangeable:
// the same scheme and host, and the same connection settings.
type transportKey struct {
	scheme, host   string
	connectTimeout time.Duration
	http1Only      bool
	netHTTP1       bool
	caFile         string
}

func transportKeyOf(bc config.Backend, u *url.URL) transportKey {
	return transportKey{
		scheme:         u.Scheme,
		host:           u.Host,
		connectTimeout: bc.ConnectTimeout.D(),
		http1Only:      bc.HTTP2 != nil && !*bc.HTTP2,
		netHTTP1:       bc.HTTP1Transport == "net/http",
		caFile:         bc.CAFile,
	}
}

// transports are the upstream transports of one Build by key: backends on
// the same host with the same connection settings (deployments of one
// Azure OpenAI resource, several pools' entries for one endpoint) share
// one, and so its keep-alive connections, instead of each opening and
// warming its own. Credentials are per request, never per connection.
type transports map[transportKey]*route.Transport

// of returns the transport of bc (at u), made on first use.
func (ts transports) of(bc config.Backend, u *url.URL) (*route.Transport, error) {
	k := transportKeyOf(bc, u)
	if t, ok := ts[k]; ok {
		return t, nil
	}
	s := route.TransportSettings{
		ConnectTimeout: k.connectTimeout,
		HTTP1Only:      k.http1Only,
		NetHTTP1:       k.netHTTP1,
	}
	if bc.CAFile != "" {
		var err error
		if s.RootCAs, err = config.LoadCAFile(bc.CAFile); err != nil {
			return nil, fmt.Errorf("backend %s: ca_file: %w", bc.Name, err)
		}
	}
	t := route.NewTransport(s)
	ts[k] = t
	return t, nil
}

// seed lets the backends of a Build share the transports of prev's (a
// reload keeps the connections of a host that stays), except those with a
// CA file, which a reload reads again.
func (ts transports) seed(prev *Engine) {
	if prev == nil {
		return
	}
	for _, bc := range prev.Config.Backends {
		b := prev.Backends[bc.Name]
		if b == nil || bc.CAFile != "" {
			continue
		}
		u, err := url.Parse(bc.URL)
		t, ok := b.Transport.(*route.Transport)
		if err != nil || !ok {
			continue
		}
		if k := transportKeyOf(bc, u); ts[k] == nil {
			ts[k] = t
		}
	}
}

// newBackend builds bc's backend: its provider, transport (ts's for its
// host and settings), timeouts, quota state and breaker.
func newBackend(bc config.Backend, d Deps, ts transports) (*route.Backend, error) {
	u, err := url.Parse(bc.URL)
	if err != nil {
		return nil, err
	}
	tr, err := ts.of(bc, u)
	if err != nil {
		return nil, err
	}
	b := &route.Backend{
		Name:                   bc.Name,
		Region:                 bc.Region,
		Transport:              tr,
		Counts:                 statusSet(bc.Breaker.Statuses),
		FirstByteTimeout:       bc.FirstByteTimeout.D(),
		StreamFirstByteTimeout: bc.StreamFirstByteTimeout.D(),
		Timeout:                bc.Timeout.D(),
		IdleTimeout:            bc.IdleTimeout.D(),
	}
	if bc.Probe != nil {
		b.HealthCheck = route.ProbeKind(bc.Probe.Kind)
		if d.Probed {
			b.ProbeInterval = bc.Probe.RecoveryInterval.D()
		}
	}
	if bc.QuotaAware == nil || *bc.QuotaAware {
		q := &route.LocalQuota{Slice: bc.QuotaSlice.D()}
		b.Quota = q
		if d.Quota != nil {
			b.Quota = d.Quota(bc.Name, q)
		}
	}
	if b.Provider, err = newProvider(bc, u, d); err != nil {
		return nil, err
	}
	if !bc.Breaker.Disabled {
		var onFailure func(breaker.Outcome, time.Time)
		if d.OnFailure != nil {
			onFailure = d.OnFailure(bc.Name)
		}
		b.Breaker = breaker.New(bc.Name, breaker.Settings{
			Failures:         bc.Breaker.Failures,
			Window:           bc.Breaker.Window.D(),
			Trip:             bc.Breaker.Trip.D(),
			AcceptRetryAfter: *bc.Breaker.AcceptRetryAfter,
			FollowRetryAfter: *bc.Breaker.FollowRetryAfter,
			MaxRetryAfter:    bc.Breaker.MaxRetryAfter.D(),
			MaxTrip:          bc.Breaker.MaxTrip.D(),
			SlowStart:        slowStart(bc.Breaker.SlowStart),
			Clock:            d.Clock,
			OnTransition:     d.OnTransition,
			OnFailure:        onFailure,
		})
	}
	return b, nil
}

// newProvider is the provider of bc's type, at base URL u.
func newProvider(bc config.Backend, u *url.URL, d Deps) (route.Provider, error) {
	var hdr http.Header
	if len(bc.Headers) > 0 {
		hdr = http.Header{}
		for k, v := range bc.Headers {
			hdr.Set(k, v)
		}
	}
	noResponses := bc.ResponsesAPI != nil && !*bc.ResponsesAPI
	switch bc.Type {
	case config.TypeOpenAI, config.TypeOpenAICompatible:
		preset, _ := config.LookupPreset(bc.Preset)
		return &route.OpenAI{BaseURL: u, APIKey: bc.APIKey.Value(), Organization: bc.Organization, Project: bc.Project, Header: hdr,
			NoResponses: noResponses, StreamUsage: bc.Type == config.TypeOpenAI || preset.StreamUsage,
			Unsupported: unsupportedOps(bc.Unsupported), Service: bc.Preset}, nil
	case config.TypeAzure:
		az := &route.Azure{Endpoint: u, APIKey: bc.APIKey.Value(), APIVersion: bc.APIVersion, Header: hdr, NoResponses: noResponses}
		src, err := entraSource(bc, d)
		if err != nil {
			return nil, err
		}
		if src != nil {
			az.Token = src
		}
		return az, nil
	case config.TypeAnthropic:
		return &route.Anthropic{BaseURL: u, APIKey: bc.APIKey.Value(), Version: bc.AnthropicVersion, Header: hdr}, nil
	case config.TypeGemini:
		return &route.Gemini{BaseURL: u, APIKey: bc.APIKey.Value(), APIVersion: bc.APIVersion, Header: hdr}, nil
	case config.TypeVertex:
		return newVertex(bc, u, hdr, d)
	case config.TypeFoundry:
		f := &route.Foundry{Endpoint: u, APIKey: bc.APIKey.Value(), APIVersion: bc.APIVersion, ExtraParameters: bc.ExtraParameters, Header: hdr}
		src, err := entraSource(bc, d)
		if err != nil {
			return nil, err
		}
		if src != nil {
			f.Token = src
		}
		return f, nil
	case config.TypeBedrock:
		return newBedrock(bc, u, hdr)
	}
	return nil, fmt.Errorf("unknown type %q", bc.Type)
}

// entraSource is the Entra ID token source of bc (azure or foundry), nil
// when it has none.
func entraSource(bc config.Backend, d Deps) (route.TokenSource, error) {
	e := bc.Entra
	if e == nil {
		return nil, nil
	}
	src, err := d.Entra.Source(entra.Settings{
		TenantID: e.TenantID, ClientID: e.ClientID, ClientSecret: e.ClientSecret.Value(),
		FederatedTokenFile: e.FederatedTokenFile, ManagedIdentity: e.ManagedIdentity,
		Scope: e.Scope, AuthorityHost: e.AuthorityHost,
	})
	if err != nil {
		return nil, err
	}
	return src, nil
}

// unsupportedOps are the operations of a backend's unsupported groups.
// Responses is not among them: a backend without it is sent Responses
// calls translated to chat (its responses_api is false).
func unsupportedOps(groups []string) []route.Operation {
	var ops []route.Operation
	for _, g := range groups {
		switch g {
		case "completions":
			ops = append(ops, route.Completions)
		case "embeddings":
			ops = append(ops, route.Embeddings)
		case "audio":
			ops = append(ops, route.AudioTranscriptions, route.AudioTranslations, route.AudioSpeech)
		case "images":
			ops = append(ops, route.ImagesGenerations, route.ImagesEdits, route.ImagesVariations)
		case "moderations":
			ops = append(ops, route.Moderations)
		case "realtime":
			ops = append(ops, route.Realtime)
		}
	}
	return ops
}

// statusSet is the set of statuses l lists.
func statusSet(l config.StatusList) *route.StatusSet {
	s := &route.StatusSet{}
	for _, r := range l {
		s.AddRange(r.Lo, r.Hi)
	}
	return s
}

// slowStart is the breaker's SlowStart for a configured slow_start: 0s
// (off) is negative in breaker.Settings, where 0 (and an unset
// slow_start, nil) means the default.
func slowStart(d *config.Duration) time.Duration {
	switch {
	case d == nil:
		return 0
	case *d == 0:
		return -1
	}
	return d.D()
}
