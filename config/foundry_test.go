package config

import (
	"strings"
	"testing"
)

// TestFoundryBackend: a foundry backend takes api_key or entra, an
// api_version (default the model inference API's) and extra_parameters;
// the setting is refused elsewhere and outside its three values, and a
// foundry backend needs its url.
func TestFoundryBackend(t *testing.T) {
	const pools = "pools:\n  - {name: p, members: [{backend: f}]}\n"
	cfg, err := Parse("f.yaml", []byte(`backends:
  - {name: f, type: foundry, url: "https://ai.services.ai.azure.com/models", api_key: k, extra_parameters: drop}
  - {name: g, type: foundry, url: "https://ai.services.ai.azure.com/models", api_version: "2025-04-01", entra: {managed_identity: true}}
`+pools), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if b := cfg.Backends[0]; b.APIVersion != DefaultFoundryAPIVersion || b.ExtraParameters != "drop" {
		t.Fatalf("backend %+v", b)
	}
	if cfg.Backends[1].APIVersion != "2025-04-01" {
		t.Fatalf("api_version %q", cfg.Backends[1].APIVersion)
	}
	tests := []struct{ name, backend, want string }{
		{"extra_parameters elsewhere", `{name: f, type: openai, api_key: k, extra_parameters: drop}`, "f.yaml:2: backends[0].extra_parameters: only for foundry backends"},
		{"extra_parameters value", `{name: f, type: foundry, url: "https://x.services.ai.azure.com", extra_parameters: keep}`, `f.yaml:2: backends[0].extra_parameters: must be pass-through, drop or error, not "keep"`},
		{"no url", `{name: f, type: foundry, api_key: k}`, "f.yaml:2: backends[0].url: missing url"},
		{"entra and key", `{name: f, type: foundry, url: "https://x.services.ai.azure.com", api_key: k, entra: {managed_identity: true}}`, "give api_key or entra, not both"},
		{"models probe", `{name: f, type: foundry, url: "https://x.services.ai.azure.com", probe: {kind: models}}`, "backends[0].probe.kind: a foundry backend has no models list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte("backends:\n  - "+tc.backend+"\n"+pools), noEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v\nwant %s", err, tc.want)
			}
		})
	}
}
