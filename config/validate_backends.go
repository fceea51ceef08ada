package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// backendTypes lists the backend types for problems that name them.
const backendTypes = "openai, openai_compatible, azure, anthropic, gemini, vertex, bedrock or foundry"

// validateBackends checks every backend: a unique name, then its own
// fields (Backend.validate). Prices are validatePrices'.
func (c *Config) validateBackends(ps *Problems) {
	names := map[string]bool{}
	for i, b := range c.Backends {
		p := fmt.Sprintf("backends[%d]", i)
		if b.Name == "" {
			ps.add(p+".name", "a backend needs a name")
		} else if names[b.Name] {
			ps.add(p+".name", "backend name %q is used twice", b.Name)
		}
		names[b.Name] = true
		b.validate(ps, p)
	}
}

// validate checks a defaulted backend at path p, its name aside.
func (b Backend) validate(ps *Problems, p string) {
	switch b.Type {
	case TypeOpenAI, TypeOpenAICompatible, TypeAzure, TypeAnthropic, TypeGemini, TypeVertex, TypeBedrock, TypeFoundry:
	case "":
		ps.add(p+".type", "missing type: use %s", backendTypes)
	default:
		ps.add(p+".type", "unknown type %q: use %s", b.Type, backendTypes)
	}
	if b.Entra != nil {
		b.validateEntra(ps, p)
	}
	b.validateProviderFields(ps, p)
	b.validateVertex(ps, p)
	b.validatePreset(ps, p)
	b.validateBedrock(ps, p)
	b.validateURL(ps, p)
	b.validateCAFile(ps, p)
	if t := b.HTTP1Transport; t != "" && t != "switchover" && t != "net/http" {
		ps.add(p+".http1_transport", "must be switchover or net/http, not %q", t)
	}
	for k := range b.Headers {
		switch strings.ToLower(k) {
		case "authorization", "api-key", "host", "content-length":
			ps.add(p+".headers", "header %q is set by switchover itself", k)
		}
	}
	b.Breaker.validate(ps, p+".breaker")
	if pr := b.Probe; pr != nil {
		pr.validate(ps, p+".probe")
		if pr.Kind == "models" && b.Type == TypeFoundry {
			ps.add(p+".probe.kind", "a foundry backend has no models list: use chat")
		}
	}
	if b.StreamFirstByteTimeout > b.Timeout || b.FirstByteTimeout > b.Timeout {
		ps.add(p+".timeout", "timeout (%s) is shorter than a first-byte timeout", b.Timeout)
	}
}

// validateEntra checks a backend's entra, which is set: an azure backend
// with exactly one way to get a token, and no api_key.
func (b Backend) validateEntra(ps *Problems, p string) {
	e := b.Entra
	n := 0
	for _, set := range []bool{e.ClientSecret != "", e.FederatedTokenFile != "", e.ManagedIdentity} {
		if set {
			n++
		}
	}
	switch {
	case b.Type != TypeAzure && b.Type != TypeFoundry:
		ps.add(p+".entra", "Entra ID tokens are for azure and foundry backends")
	case n != 1:
		ps.add(p+".entra", "give exactly one of client_secret, federated_token_file and managed_identity")
	case !e.ManagedIdentity && (e.TenantID == "" || e.ClientID == ""):
		ps.add(p+".entra", "tenant_id and client_id are needed with client_secret or federated_token_file")
	}
	if b.APIKey != "" {
		ps.add(p+".api_key", "give api_key or entra, not both")
	}
}

// validateProviderFields checks the fields only some types take, and
// that organization and project are header values.
func (b Backend) validateProviderFields(ps *Problems, p string) {
	if b.AnthropicVersion != "" && b.Type != TypeAnthropic {
		ps.add(p+".anthropic_version", "only for anthropic backends")
	}
	if b.ResponsesAPI != nil && b.Type != TypeOpenAI && b.Type != TypeOpenAICompatible && b.Type != TypeAzure {
		ps.add(p+".responses_api", "only for openai, openai_compatible and azure backends (anthropic and gemini are always reached through translation)")
	}
	openai := b.Type == TypeOpenAI || b.Type == TypeOpenAICompatible
	if b.Organization != "" && !openai {
		ps.add(p+".organization", "only for openai and openai_compatible backends")
	}
	if b.Project != "" && !openai && b.Type != TypeVertex {
		ps.add(p+".project", "only for openai, openai_compatible and vertex backends")
	}
	switch {
	case b.ExtraParameters != "" && b.Type != TypeFoundry:
		ps.add(p+".extra_parameters", "only for foundry backends")
	case b.ExtraParameters != "" && b.ExtraParameters != "pass-through" && b.ExtraParameters != "drop" && b.ExtraParameters != "error":
		ps.add(p+".extra_parameters", "must be pass-through, drop or error, not %q", b.ExtraParameters)
	}
	for _, f := range []struct{ name, v string }{{"organization", b.Organization}, {"project", b.Project}} {
		if strings.ContainsAny(f.v, "\r\n") || strings.TrimSpace(f.v) != f.v {
			ps.add(p+"."+f.name, "%q is not a header value", f.v)
		}
	}
}

// validateURL checks that the url is an http(s) API root, without a query
// and, for azure, without a deployment path.
func (b Backend) validateURL(ps *Problems, p string) {
	if u, err := url.Parse(b.URL); b.URL == "" {
		ps.add(p+".url", "missing url")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ps.add(p+".url", "%q is not an http(s) URL", b.URL)
	} else if u.RawQuery != "" {
		ps.add(p+".url", "the url must not have a query; use api_version for azure")
	}
	if b.Type == TypeAzure && strings.Contains(b.URL, "/openai/deployments") {
		ps.add(p+".url", "give the resource endpoint (https://NAME.openai.azure.com); the deployment comes from the pool member's model")
	}
}

// validate checks a breaker at path p.
func (b Breaker) validate(ps *Problems, p string) {
	if b.Failures < 1 {
		ps.add(p+".failures", "must be 1 or more")
	}
	if b.MaxRetryAfter < b.Trip {
		ps.add(p+".max_retry_after", "(%s) is shorter than trip (%s)", b.MaxRetryAfter, b.Trip)
	}
	if b.MaxTrip < b.Trip {
		ps.add(p+".max_trip", "(%s) is shorter than trip (%s)", b.MaxTrip, b.Trip)
	}
}

// validate checks a defaulted probe at path p.
func (pr *Probe) validate(ps *Problems, p string) {
	if pr.Interval != 0 && pr.Interval < Duration(10*time.Second) {
		ps.add(p+".interval", "must be at least 10s (a probe may cost quota), or 0 for no probes while healthy")
	}
	if pr.Interval != 0 && pr.Timeout > pr.Interval {
		ps.add(p+".timeout", "must not be longer than the interval")
	}
	if pr.RecoveryInterval < Duration(time.Second) {
		ps.add(p+".recovery_interval", "must be at least 1s")
	}
	if pr.Kind != "chat" && pr.Kind != "models" {
		ps.add(p+".kind", "must be chat or models, not %q", pr.Kind)
	}
	if pr.Failures < 1 {
		ps.add(p+".failures", "must be 1 or more")
	}
}

// validatePrices checks that no backend's price is negative.
func (c *Config) validatePrices(ps *Problems) {
	for i, b := range c.Backends {
		if p := b.Price; p != nil && (p.Input < 0 || p.CachedInput < 0 || p.Output < 0) {
			ps.add(fmt.Sprintf("backends[%d].price", i), "prices must not be negative")
		}
	}
}
