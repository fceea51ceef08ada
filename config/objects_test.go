package config

import (
	"bytes"
	"strings"
	"testing"
)

func noEnv(string) (string, bool) { return "", false }

const objectsBase = `keys:
  - {name: app, key: app-key-0123456789abcdef0123456789abcdef, team: red}
teams:
  - {name: red, share_objects: true}
backends:
  - {name: a, type: openai, api_key: sk-0000000000000000}
pools:
  - {name: chat, members: [{backend: a}]}
`

func TestObjectIDsErrorsNameTheirLine(t *testing.T) {
	for _, c := range []struct{ name, yaml, want string }{
		{"short secret", objectsBase + "object_ids:\n  secret: short\n", `o.yaml:10: object_ids.secret: is 5 characters; use at least 16`},
		{"previous without secret", objectsBase + "object_ids:\n  previous_secrets: [old-secret-0123456789]\n", `o.yaml:10: object_ids.previous_secrets: set object_ids.secret too`},
		{"short previous", objectsBase + "object_ids:\n  secret: new-secret-0123456789\n  previous_secrets: [old]\n", `o.yaml:11: object_ids.previous_secrets[0]: is 3 characters`},
		{"share_objects not a bool", strings.Replace(objectsBase, "share_objects: true", "share_objects: maybe", 1), `o.yaml:4:`},
	} {
		_, err := Parse("o.yaml", []byte(c.yaml), noEnv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestObjectSecrets(t *testing.T) {
	cfg, err := Parse("o.yaml", []byte(objectsBase), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Teams[0].ShareObjects {
		t.Errorf("share_objects not read")
	}
	derived := cfg.ObjectSecrets()
	if len(derived) != 1 || len(derived[0]) != 32 || bytes.Contains(derived[0], []byte("sk-0000000000000000")) {
		t.Fatalf("derived secrets: %q", derived)
	}
	again, _ := Parse("o.yaml", []byte(objectsBase), noEnv)
	if !bytes.Equal(again.ObjectSecrets()[0], derived[0]) {
		t.Errorf("the derived secret differs between two loads of one file")
	}
	rotated, _ := Parse("o.yaml", []byte(strings.Replace(objectsBase, "sk-0000000000000000", "sk-1111111111111111", 1)), noEnv)
	if bytes.Equal(rotated.ObjectSecrets()[0], derived[0]) {
		t.Errorf("a rotated backend key kept the derived secret")
	}
	set, err := Parse("o.yaml", []byte(objectsBase+"object_ids: {secret: new-secret-0123456789, previous_secrets: [old-secret-0123456789]}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if s := set.ObjectSecrets(); len(s) != 2 || string(s[0]) != "new-secret-0123456789" || string(s[1]) != "old-secret-0123456789" {
		t.Errorf("set secrets: %q", s)
	}
	if strings.Contains(set.ObjectIDs.Secret.String(), "new-secret") {
		t.Errorf("the secret prints")
	}
	// Keys in a store, no credential anywhere: the secret is required.
	bare := "store: {sqlite: x.db}\nbackends:\n  - {name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}\npools:\n  - {name: chat, members: [{backend: a}]}\n"
	if _, err := Parse("o.yaml", []byte(bare), noEnv); err == nil || !strings.Contains(err.Error(), "object_ids.secret: keys are in use") {
		t.Errorf("no secret to sign with: %v", err)
	}
}
