package config

import (
	"strings"
	"testing"
)

// TestPoolMembersOfOneModelOnManyClouds: Claude on Anthropic, Bedrock (a
// cross-region profile) and Vertex agree, and draw no warning; a member
// serving a model with a smaller window and no vision or thinking is
// warned of on its line; members of unknown models are not compared.
func TestPoolMembersOfOneModelOnManyClouds(t *testing.T) {
	const y = `backends:
  - {name: claude, type: anthropic, api_key: k}
  - {name: claude-too, type: anthropic, api_key: k}
  - {name: claude-three, type: anthropic, api_key: k}
  - {name: oai, type: openai, api_key: k}
  - {name: local, type: openai_compatible, url: "http://127.0.0.1:1/v1"}
pools:
  - name: sonnet
    members:
      - {backend: claude, model: claude-sonnet-4-5-20250929}
      - {backend: claude-too, model: us.anthropic.claude-sonnet-4-5-20250929-v1:0}
      - {backend: claude-three, model: claude-sonnet-4-5@20250929}
      - {backend: local, model: my-finetune}
  - name: mixed
    members:
      - {backend: claude, model: claude-sonnet-4-5}
      - {backend: oai, model: gpt-4o}
`
	cfg, err := Parse("m.yaml", []byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	ws := cfg.Warnings()
	if len(ws) != 1 {
		t.Fatalf("warnings %v, want one", ws)
	}
	w := ws[0]
	for _, want := range []string{"pools[1].members[1]", "model gpt-4o (gpt-4o) differs from pools[1].members[0]'s claude-sonnet-4-5",
		"a context window of 128000 tokens, not 200000", "no thinking"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if w.Line != 17 {
		t.Errorf("line %d, want 17", w.Line)
	}
	if strings.Contains(w.String(), "vision") || strings.Contains(w.String(), "tools") {
		t.Errorf("warning %q names a capability both have", w)
	}
}

// TestBackendService: a preset names the service, else the type.
func TestBackendService(t *testing.T) {
	for _, tc := range []struct {
		b    Backend
		want string
	}{{Backend{Type: TypeOpenAICompatible, Preset: "groq"}, "groq"}, {Backend{Type: TypeFoundry}, "foundry"}, {Backend{Type: TypeAnthropic}, "anthropic"}} {
		if got := tc.b.Service(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.b, got, tc.want)
		}
	}
}
