package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Preset is what switchover knows of a hosted or self-hosted service of
// the OpenAI API: where it is, how it takes its key, which rate-limit
// headers it sends, how it names models, and which operations it lacks.
// A backend that names a preset (backends[].preset) gets its url,
// unsupported operations and responses_api from it, unless it sets them
// itself.
type Preset struct {
	// Name is what backends[].preset says.
	Name string
	// URL is the API root an SDK would use; empty for a self-hosted
	// server, whose url the backend must give.
	URL string
	// Auth is how the key is sent: "bearer" (Authorization: Bearer, key
	// required) or "optional" (Bearer when a key is given: a self-hosted
	// server started with one).
	Auth string
	// RateLimits names the rate-limit headers the service sends, and
	// whether the quota-aware router reads them.
	RateLimits string
	// Models is how the service names models, with an example.
	Models string
	// Unsupported are the operations (see operationGroups) the service does
	// not serve: members of its backends are skipped for them with the
	// reason unsupported, and "responses" is translated to chat.
	Unsupported []string
	// StreamUsage says the service takes stream_options.include_usage,
	// so the gateway may ask it for a stream's usage chunk.
	StreamUsage bool
}

// operationGroups are the operation groups a backend's unsupported list
// may name (chat is not one: every backend serves it).
var operationGroups = []string{"completions", "embeddings", "responses", "audio", "images", "moderations", "realtime"}

// presets is the table of known services. The facts are the services'
// public documentation as read in 2026-03; a service that adds an
// operation is reached by setting the backend's unsupported list.
var presets = []Preset{
	{Name: "mistral", URL: "https://api.mistral.ai/v1", Auth: "bearer",
		RateLimits:  "its own per-minute and per-month token headers, not read: 429 and Retry-After only",
		Models:      "mistral-large-latest, or a version such as mistral-small-2503",
		Unsupported: []string{"completions", "responses", "audio", "images", "moderations", "realtime"}},
	{Name: "groq", URL: "https://api.groq.com/openai/v1", Auth: "bearer",
		RateLimits:  "x-ratelimit-{limit,remaining,reset}-{requests,tokens} (requests per day, tokens per minute; resets such as 2m59.56s), read",
		Models:      "llama-3.3-70b-versatile, openai/gpt-oss-120b",
		Unsupported: []string{"completions", "embeddings", "responses", "images", "moderations", "realtime"}},
	{Name: "together", URL: "https://api.together.xyz/v1", Auth: "bearer",
		RateLimits:  "x-ratelimit-{limit,remaining,reset} (requests; reset in seconds) and x-ratelimit-{limit,remaining}-tokens, read",
		Models:      "organisation/model: meta-llama/Llama-3.3-70B-Instruct-Turbo",
		Unsupported: []string{"responses", "moderations", "realtime"}, StreamUsage: true},
	{Name: "fireworks", URL: "https://api.fireworks.ai/inference/v1", Auth: "bearer",
		RateLimits:  "x-ratelimit-{limit,remaining}-requests, read; x-ratelimit-over-limit",
		Models:      "accounts/fireworks/models/llama-v3p3-70b-instruct",
		Unsupported: []string{"responses", "audio", "images", "moderations", "realtime"}, StreamUsage: true},
	{Name: "deepseek", URL: "https://api.deepseek.com/v1", Auth: "bearer",
		RateLimits:  "none (it sets no fixed limit and slows answers down instead, sending keep-alive lines)",
		Models:      "deepseek-chat, deepseek-reasoner",
		Unsupported: []string{"completions", "embeddings", "responses", "audio", "images", "moderations", "realtime"}, StreamUsage: true},
	{Name: "openrouter", URL: "https://openrouter.ai/api/v1", Auth: "bearer",
		RateLimits:  "x-ratelimit-{limit,remaining,reset} on some models (reset in epoch milliseconds), read",
		Models:      "provider/model: anthropic/claude-sonnet-4.5, openai/gpt-4o",
		Unsupported: []string{"completions", "embeddings", "responses", "audio", "images", "moderations", "realtime"}, StreamUsage: true},
	{Name: "xai", URL: "https://api.x.ai/v1", Auth: "bearer",
		RateLimits:  "none documented; OpenAI's x-ratelimit-* are read if sent",
		Models:      "grok-4, grok-3-mini",
		Unsupported: []string{"completions", "embeddings", "responses", "audio", "moderations", "realtime"}, StreamUsage: true},
	{Name: "perplexity", URL: "https://api.perplexity.ai", Auth: "bearer",
		RateLimits:  "none documented: 429 only",
		Models:      "sonar, sonar-pro, sonar-reasoning-pro",
		Unsupported: []string{"completions", "embeddings", "responses", "audio", "images", "moderations", "realtime"}},
	{Name: "vllm", Auth: "optional",
		RateLimits:  "none (a server of your own)",
		Models:      "the --served-model-name, by default the Hugging Face id: meta-llama/Llama-3.1-8B-Instruct",
		Unsupported: []string{"images", "moderations", "realtime"}, StreamUsage: true},
	{Name: "ollama", URL: "http://localhost:11434/v1", Auth: "optional",
		RateLimits:  "none (a server of your own)",
		Models:      "name:tag as pulled: llama3.1:8b",
		Unsupported: []string{"responses", "audio", "images", "moderations", "realtime"}},
}

// LookupPreset returns the preset named name.
func LookupPreset(name string) (Preset, bool) {
	for _, p := range presets {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var ns []string
	for _, p := range presets {
		ns = append(ns, p.Name)
	}
	sort.Strings(ns)
	return ns
}

// Line is the preset as `switchover check` prints it for a backend whose
// resolved settings are b.
func (p Preset) Line(b Backend) string {
	un := "none"
	if len(b.Unsupported) > 0 {
		un = strings.Join(b.Unsupported, ", ")
	}
	return fmt.Sprintf("backend %s: preset %s: url %s, key %s, unsupported: %s; rate limits: %s; models: %s",
		b.Name, p.Name, b.URL, p.Auth, un, p.RateLimits, p.Models)
}

// applyPreset fills b's unset fields from its preset: the type
// (openai_compatible), the url and the unsupported operations; then
// responses_api is false when unsupported lists responses. A field the
// backend sets wins.
func (b *Backend) applyPreset() {
	if p, ok := LookupPreset(b.Preset); ok {
		setDefault(&b.Type, TypeOpenAICompatible)
		setDefault(&b.URL, p.URL)
		if b.Unsupported == nil {
			b.Unsupported = slices.Clone(p.Unsupported)
		}
	}
	if b.ResponsesAPI == nil && slices.Contains(b.Unsupported, "responses") {
		b.ResponsesAPI = new(false)
	}
}

// validatePreset checks a backend's preset and unsupported list.
func (b Backend) validatePreset(ps *Problems, p string) {
	if b.Preset != "" {
		pr, ok := LookupPreset(b.Preset)
		switch {
		case !ok:
			ps.add(p+".preset", "unknown preset %q: use one of %s", b.Preset, strings.Join(PresetNames(), ", "))
		case b.Type != TypeOpenAICompatible && b.Type != TypeOpenAI:
			ps.add(p+".preset", "presets are for openai_compatible backends, not %s", b.Type)
		case pr.Auth == "bearer" && b.APIKey == "":
			ps.add(p+".api_key", "%s needs an api_key", pr.Name)
		}
	}
	for _, op := range b.Unsupported {
		if !slices.Contains(operationGroups, op) {
			ps.add(p+".unsupported", "unknown operation %q: use %s", op, strings.Join(operationGroups, ", "))
		}
	}
	if len(b.Unsupported) > 0 && b.Type != TypeOpenAICompatible && b.Type != TypeOpenAI {
		ps.add(p+".unsupported", "only for openai and openai_compatible backends")
	}
}
