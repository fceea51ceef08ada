package ledgerapi_test

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

// TestKeyTags: tags and metadata set at creation, shown, replaced by
// PATCH, and GET /admin/keys?tag= keeps the store's and the config's keys
// that have every tag asked.
func TestKeyTags(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		e := newEnv(t, s, func(h *ledgerapi.Handler) {
			h.Static = func() []ledger.Key {
				return []ledger.Key{{ID: "cfg_app", Name: "app", Tags: []string{"prod", "config"}}}
			}
		})
		var a, b keyAnswer
		e.json("POST", "/admin/keys", `{"name":"a","tags":["prod","team-a","prod"],"metadata":{"owner":"Ana","cost-center":"42"}}`, http.StatusCreated, &a)
		if !slices.Equal(a.Key.Tags, []string{"prod", "team-a"}) || !reflect.DeepEqual(a.Key.Metadata, map[string]string{"owner": "Ana", "cost-center": "42"}) {
			t.Fatalf("created tags %q, metadata %q", a.Key.Tags, a.Key.Metadata)
		}
		e.json("POST", "/admin/keys", `{"name":"b","tags":["staging"]}`, http.StatusCreated, &b)
		list := func(query string) []string {
			var l struct{ Keys []ledgerapi.KeyView }
			e.json("GET", "/admin/keys"+query, "", http.StatusOK, &l)
			var ids []string
			for _, k := range l.Keys {
				ids = append(ids, k.ID)
			}
			return ids
		}
		for query, want := range map[string][]string{
			"":                        {a.Key.ID, b.Key.ID, "cfg_app"},
			"?tag=prod":               {a.Key.ID, "cfg_app"},
			"?tag=prod&tag=team-a":    {a.Key.ID},
			"?tag=staging":            {b.Key.ID},
			"?tag=config":             {"cfg_app"},
			"?tag=nobody&tag=staging": nil,
		} {
			got := list(query) // keys made at one time are listed by ID
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("GET /admin/keys%s = %v, want %v", query, got, want)
			}
		}
		var u keyAnswer
		e.json("PATCH", "/admin/keys/"+a.Key.ID, `{"tags":["dev"],"metadata":{}}`, http.StatusOK, &u)
		if !slices.Equal(u.Key.Tags, []string{"dev"}) || u.Key.Metadata != nil {
			t.Fatalf("after PATCH: tags %q, metadata %q", u.Key.Tags, u.Key.Metadata)
		}
		e.json("GET", "/admin/keys/"+a.Key.ID, "", http.StatusOK, &u)
		if !slices.Equal(u.Key.Tags, []string{"dev"}) || u.Key.Name != "a" {
			t.Fatalf("GET after PATCH: %+v", u.Key)
		}
	})
}

// TestKeyTagsBadInput: tags and metadata out of bounds are a 400 naming
// the field, and nothing is stored.
func TestKeyTagsBadInput(t *testing.T) {
	e := newEnv(t, openSQLite(t))
	many := `"t0"`
	for i := 1; i <= 16; i++ {
		many += `,"t` + string(rune('a'+i)) + `"`
	}
	for body, field := range map[string]string{
		`{"name":"x","tags":["my tag"]}`:                                       "tags:",
		`{"name":"x","tags":["a';--"]}`:                                        "tags:",
		`{"name":"x","tags":[""]}`:                                             "tags:",
		`{"name":"x","tags":["` + strings.Repeat("t", 65) + `"]}`:              "tags:",
		`{"name":"x","tags":[` + many + `]}`:                                   "tags:",
		`{"name":"x","tags":"prod"}`:                                           "tags:",
		`{"name":"x","metadata":{"a b":"c"}}`:                                  "metadata:",
		`{"name":"x","metadata":{"owner":"a\nb"}}`:                             "metadata:",
		`{"name":"x","metadata":{"owner":"` + strings.Repeat("v", 513) + `"}}`: "metadata:",
		`{"name":"x","metadata":{"owner":1}}`:                                  "metadata",
		`{"name":"x","metadata":["owner"]}`:                                    "metadata:",
	} {
		var a errorAnswer
		e.json("POST", "/admin/keys", body, http.StatusBadRequest, &a)
		if !strings.HasPrefix(a.Error.Message, field) {
			t.Errorf("POST %s: %q does not start with %s", body, a.Error.Message, field)
		}
	}
	for _, query := range []string{"/admin/keys?tag=a%20b", "/admin/keys?tag=", "/admin/usage?tag=x%27y"} {
		var a errorAnswer
		e.json("GET", query, "", http.StatusBadRequest, &a)
		if !strings.HasPrefix(a.Error.Message, "tag:") {
			t.Errorf("GET %s: %q does not start with tag:", query, a.Error.Message)
		}
	}
	if ks, err := e.h.Store.Keys(t.Context()); err != nil || len(ks) != 0 {
		t.Fatalf("keys stored after refusals: %v, %v", ks, err)
	}
}

// TestUsageByTag: GET /admin/usage groups by tag and filters on one.
func TestUsageByTag(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		recs := []ledger.Usage{
			{At: at("2026-12-01T08:00:00Z"), RequestID: "r1", KeyID: "key_1", Tags: []string{"prod", "team-a"}, PromptTokens: 10, Cost: 0.01},
			{At: at("2026-12-01T09:00:00Z"), RequestID: "r2", KeyID: "key_2", Tags: []string{"prod"}, PromptTokens: 20, Cost: 0.02},
			{At: at("2026-12-01T09:30:00Z"), RequestID: "r3", KeyID: "key_3", PromptTokens: 40, Cost: 0.04},
		}
		if err := s.RecordUsage(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s)
		for query, want := range map[string]string{
			"?by=tag&format=csv": `tag,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
,1,0,40,0,0,0,0.04
prod,2,0,30,0,0,0,0.03
team-a,1,0,10,0,0,0,0.01
`,
			"?by=key&tag=prod&format=csv": `key,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
key_1,1,0,10,0,0,0,0.01
key_2,1,0,20,0,0,0,0.02
`,
			"?from=2026-12-01T08:30:00Z&to=2026-12-01T10:00:00Z&by=tag,key&tag=prod&format=csv": `tag,key,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
prod,key_2,1,0,20,0,0,0,0.02
`,
		} {
			code, raw := e.do("GET", "/admin/usage"+query, "")
			if code != http.StatusOK || string(raw) != want {
				t.Errorf("GET /admin/usage%s = %d\n%s\nwant\n%s", query, code, raw, want)
			}
		}
	})
}
