package config

import (
	"slices"
	"strings"
	"testing"
)

// TestPresets: every preset resolves to an openai_compatible backend with
// its url (or the one given), its unsupported operations, responses_api
// false where it lacks the Responses API, and a check line that names it.
func TestPresets(t *testing.T) {
	tests := []struct {
		preset, url     string
		wantURL         string
		wantUnsupported []string
		wantResponses   bool
	}{
		{"mistral", "", "https://api.mistral.ai/v1", []string{"completions", "responses", "audio", "images", "moderations", "realtime"}, false},
		{"groq", "", "https://api.groq.com/openai/v1", []string{"completions", "embeddings", "responses", "images", "moderations", "realtime"}, false},
		{"together", "", "https://api.together.xyz/v1", []string{"responses", "moderations", "realtime"}, false},
		{"fireworks", "", "https://api.fireworks.ai/inference/v1", []string{"responses", "audio", "images", "moderations", "realtime"}, false},
		{"deepseek", "", "https://api.deepseek.com/v1", []string{"completions", "embeddings", "responses", "audio", "images", "moderations", "realtime"}, false},
		{"openrouter", "", "https://openrouter.ai/api/v1", []string{"completions", "embeddings", "responses", "audio", "images", "moderations", "realtime"}, false},
		{"xai", "", "https://api.x.ai/v1", []string{"completions", "embeddings", "responses", "audio", "moderations", "realtime"}, false},
		{"perplexity", "", "https://api.perplexity.ai", []string{"completions", "embeddings", "responses", "audio", "images", "moderations", "realtime"}, false},
		{"vllm", "http://vllm.internal:8000/v1", "http://vllm.internal:8000/v1", []string{"images", "moderations", "realtime"}, true},
		{"ollama", "", "http://localhost:11434/v1", []string{"responses", "audio", "images", "moderations", "realtime"}, false},
	}
	if len(tests) != len(presets) {
		t.Fatalf("%d presets tested of %d", len(tests), len(presets))
	}
	for _, tc := range tests {
		t.Run(tc.preset, func(t *testing.T) {
			y := "backends:\n  - {name: b, preset: " + tc.preset + ", api_key: sk-secret-123"
			if tc.url != "" {
				y += ", url: " + tc.url
			}
			y += "}\npools:\n  - {name: p, members: [{backend: b}]}\n"
			cfg, err := Parse("p.yaml", []byte(y), noEnv)
			if err != nil {
				t.Fatal(err)
			}
			b := cfg.Backends[0]
			if b.Type != TypeOpenAICompatible || b.URL != tc.wantURL || !slices.Equal(b.Unsupported, tc.wantUnsupported) {
				t.Fatalf("type %s url %s unsupported %q", b.Type, b.URL, b.Unsupported)
			}
			if got := b.ResponsesAPI == nil || *b.ResponsesAPI; got != tc.wantResponses {
				t.Fatalf("responses_api %v, want %v", got, tc.wantResponses)
			}
			p, _ := LookupPreset(tc.preset)
			if line := p.Line(b); !strings.Contains(line, "backend b: preset "+tc.preset+": url "+tc.wantURL) || strings.Contains(line, "sk-secret-123") {
				t.Fatalf("line %q", line)
			}
		})
	}
}

// TestPresetExplicitSettingsWin: a backend's own url, unsupported list
// (even empty) and responses_api override its preset's.
func TestPresetExplicitSettingsWin(t *testing.T) {
	cfg, err := Parse("p.yaml", []byte(`backends:
  - {name: a, preset: groq, api_key: k, url: "https://groq.example/v1", unsupported: [], responses_api: true}
  - {name: b, preset: deepseek, api_key: k, unsupported: [embeddings]}
pools:
  - {name: p, members: [{backend: a}, {backend: b}]}
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Backends[0], cfg.Backends[1]
	if a.URL != "https://groq.example/v1" || len(a.Unsupported) != 0 || !*a.ResponsesAPI {
		t.Fatalf("a: %s %q %v", a.URL, a.Unsupported, *a.ResponsesAPI)
	}
	if !slices.Equal(b.Unsupported, []string{"embeddings"}) || b.ResponsesAPI != nil {
		t.Fatalf("b: %q %v", b.Unsupported, b.ResponsesAPI)
	}
}

// TestPresetProblems: an unknown preset, a preset on another type, a
// hosted preset without its key, an unknown operation, and unsupported
// on a type it does not apply to, each on its line.
func TestPresetProblems(t *testing.T) {
	tests := []struct{ name, backend, want string }{
		{"unknown preset", `{name: b, preset: grok, api_key: k}`, `p.yaml:2: backends[0].preset: unknown preset "grok": use one of deepseek, fireworks, groq, mistral, ollama, openrouter, perplexity, together, vllm, xai`},
		{"other type", `{name: b, type: anthropic, preset: groq, api_key: k}`, "p.yaml:2: backends[0].preset: presets are for openai_compatible backends, not anthropic"},
		{"no key", `{name: b, preset: groq}`, "p.yaml:2: backends[0].api_key: groq needs an api_key"},
		{"self-hosted without url", `{name: b, preset: vllm}`, "p.yaml:2: backends[0].url: missing url"},
		{"unknown operation", `{name: b, preset: ollama, unsupported: [chat]}`, `p.yaml:2: backends[0].unsupported: unknown operation "chat"`},
		{"unsupported elsewhere", `{name: b, type: anthropic, api_key: k, unsupported: [embeddings]}`, "p.yaml:2: backends[0].unsupported: only for openai and openai_compatible backends"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte("backends:\n  - "+tc.backend+"\npools:\n  - {name: p, members: [{backend: b}]}\n"), noEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v\nwant %s", err, tc.want)
			}
		})
	}
}
