package config

import (
	"strings"
	"testing"
	"time"
)

func TestRequestLogBadConfigNamesLines(t *testing.T) {
	_, err := Load("testdata/requestlog.bad.yaml")
	if err == nil {
		t.Fatal("requestlog.bad.yaml loaded")
	}
	for _, w := range []string{
		`requestlog.bad.yaml:5: keys[0].request_log.max_body_bytes: 2097152 bytes is out of range: 1 to 1MiB (default 16KiB)`,
		`requestlog.bad.yaml:15: pools[0].request_log.bodies: needs a store (store.sqlite or store.postgres) to keep them in`,
		`requestlog.bad.yaml:16: pools[0].request_log.max_body_bytes: must be 1 or more (default 16KiB)`,
		`requestlog.bad.yaml:20:`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
}

func TestRequestLogBodiesOffByDefault(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml      string
		pool, key bool
		limit     int64
		retention time.Duration
		problem   string
	}{
		"unset": {yaml: ``, limit: DefaultMaxBodyBytes, retention: DefaultBodyRetention},
		"pool on, key unset": {yaml: `
    request_log: {bodies: true, max_body_bytes: 4KiB}`, pool: true, limit: 4 << 10, retention: DefaultBodyRetention},
		"retention 2d": {yaml: `
store_body_retention: 2d`, limit: DefaultMaxBodyBytes, retention: 48 * time.Hour},
		"retention 0": {yaml: `
store_body_retention: "0"`, limit: DefaultMaxBodyBytes, retention: 0},
		"retention longer than the rows'": {yaml: `
store_body_retention: 60d`, problem: `store.body_retention: 60d is longer than store.retention (40d)`},
		"retention not a time": {yaml: `
store_body_retention: soon`, problem: `store.body_retention: "soon" is not a time such as 90d or 2160h (or 0: as long as their requests' rows)`},
	} {
		t.Run(name, func(t *testing.T) {
			pool, store := tc.yaml, ""
			if r, ok := strings.CutPrefix(tc.yaml, "\nstore_body_retention: "); ok {
				pool, store = "", "\n  body_retention: "+r
			}
			c, err := Parse("c.yaml", []byte(`
backends:
  - {name: b, type: openai, url: "http://127.0.0.1:1", api_key: x}
store:
  sqlite: /tmp/x.db
  retention: 40d`+store+`
pools:
  - name: p
    members: [{backend: b}]`+pool+`
`), func(string) (string, bool) { return "", false })
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("Parse = %v, want %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			l := c.Pools[0].RequestLog
			if l.BodiesOn() != tc.pool || l.BodyLimit() != tc.limit || c.Store.BodyRetentionAge() != tc.retention {
				t.Errorf("bodies %v, limit %d, retention %v; want %v, %d, %v", l.BodiesOn(), l.BodyLimit(), c.Store.BodyRetentionAge(),
					tc.pool, tc.limit, tc.retention)
			}
		})
	}
}

// TestSecretValuesFindsEverySecret: the values the request log redacts
// word for word are every Secret of the file, the short ones aside.
func TestSecretValuesFindsEverySecret(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`
admin: {listen: 127.0.0.1:0, key: admin-key-0123456789, viewers: [{name: v, key: viewer-key-0123456789}]}
keys:
  - {name: a, key: file-key-0123456789abcdefghijklmnopqrstuv}
backends:
  - {name: b, type: openai, url: "http://127.0.0.1:1", api_key: backend-key-0123456789}
  - {name: c, type: openai, url: "http://127.0.0.1:1", api_key: short}
pools:
  - {name: p, members: [{backend: b}, {backend: c}]}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.SecretValues(), " ")
	for _, want := range []string{"admin-key-0123456789", "viewer-key-0123456789", "file-key-0123456789abcdefghijklmnopqrstuv", "backend-key-0123456789"} {
		if !strings.Contains(got, want) {
			t.Errorf("SecretValues lacks %s: %s", want, got)
		}
	}
	if strings.Contains(got, "short") {
		t.Errorf("SecretValues has a secret of 5 bytes: %s", got)
	}
}
