package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKeyTagsAndMetadata: a file's key takes tags and metadata, and
// refuses them out of bounds.
func TestKeyTagsAndMetadata(t *testing.T) {
	base := "backends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\n"
	env := func(string) (string, bool) { return "", false }
	good := "keys:\n  - name: app\n    key: app-key-0123456789abcdef0123456789\n    tags: [prod, team-a]\n    metadata: {owner: Ana Pérez, ticket: OPS-1}\n" + base
	cfg, err := Parse("k.yaml", []byte(good), env)
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Keys[0]
	if !slices.Equal(k.Tags, []string{"prod", "team-a"}) || !reflect.DeepEqual(k.Metadata, map[string]string{"owner": "Ana Pérez", "ticket": "OPS-1"}) {
		t.Fatalf("tags %q, metadata %q", k.Tags, k.Metadata)
	}
	for field, y := range map[string]string{
		"keys[0].tags":     "    tags: [\"my tag\"]\n",
		"keys[0].metadata": "    metadata: {\"cost center\": x}\n",
	} {
		bad := "keys:\n  - name: app\n    key: app-key-0123456789abcdef0123456789\n" + y + base
		if _, err := Parse("k.yaml", []byte(bad), env); err == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: %v, want a problem at %s", strings.TrimSpace(y), err, field)
		}
	}
}

// TestStoreRetention: store.retention takes days or a duration, 0 is
// forever, and less than 32 days or a non-time is refused.
func TestStoreRetention(t *testing.T) {
	base := "backends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\n"
	env := func(string) (string, bool) { return "", false }
	for v, want := range map[string]time.Duration{"": 0, "0": 0, "90d": 90 * 24 * time.Hour, "800h": 800 * time.Hour, "32d": MinRetention} {
		y := "store: {sqlite: a.db, retention: \"" + v + "\"}\n" + base
		cfg, err := Parse("r.yaml", []byte(y), env)
		if err != nil {
			t.Fatalf("retention %q: %v", v, err)
		}
		if got := cfg.Store.RetentionAge(); got != want {
			t.Errorf("retention %q = %v, want %v", v, got, want)
		}
	}
	for _, v := range []string{"31d", "1h", "soon", "-5d", "90 days"} {
		y := "store: {sqlite: a.db, retention: \"" + v + "\"}\n" + base
		if _, err := Parse("r.yaml", []byte(y), env); err == nil || !strings.Contains(err.Error(), "store.retention:") {
			t.Errorf("retention %q: %v, want a problem at store.retention", v, err)
		}
	}
}
