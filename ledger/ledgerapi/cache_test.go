package ledgerapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

// TestKeyCache: a key's own cache settings through the admin API on
// SQLite and PostgreSQL: set on creation, shown, changed, turned off (an
// own policy that is off), removed with null and with "none"; the store
// keeps what the API showed, and a config file's key shows its own
// read-only.
func TestKeyCache(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		off, yes := false, true
		e := newEnv(t, s, func(h *ledgerapi.Handler) {
			h.Static = func() []ledger.Key {
				return []ledger.Key{{ID: "cfg_app", Name: "app", Cache: &cachepolicy.Policy{TTL: time.Minute}}}
			}
		})
		var c keyAnswer
		raw := e.json("POST", "/admin/keys", `{"name":"app","cache":{"ttl":"10m","coalesce":true,"max_wait":"5s","max_entry":"1MiB"}}`, http.StatusCreated, &c)
		want := &cachepolicy.Policy{TTL: 10 * time.Minute, Coalesce: &yes, MaxWait: 5 * time.Second, MaxEntry: 1 << 20}
		if !reflect.DeepEqual(c.Key.Cache, want) || !strings.Contains(string(raw), `"ttl": "10m0s"`) || !strings.Contains(string(raw), `"max_entry": "1MiB"`) {
			t.Fatalf("created %s; want the cache %+v", raw, want)
		}
		patchSteps(t, e, s, c, func(k ledger.Key) *cachepolicy.Policy { return k.Cache }, want, []patchStep[*cachepolicy.Policy]{
			{"a longer ttl, the rest its default", `{"cache":{"ttl":"1h"}}`, &cachepolicy.Policy{TTL: time.Hour, Coalesce: &yes}},
			{"left alone by another change", `{"rpm":5}`, &cachepolicy.Policy{TTL: time.Hour, Coalesce: &yes}},
			{"off: neither the pools' cache nor coalescing", `{"cache":{"coalesce":false}}`, &cachepolicy.Policy{Coalesce: &off}},
			{"removed with null", `{"cache":null}`, nil},
			{"set in bytes", `{"cache":{"ttl":"30s","max_entry":65536}}`, &cachepolicy.Policy{TTL: 30 * time.Second, Coalesce: &yes, MaxEntry: 65536}},
			{"removed with none", `{"cache":"none"}`, nil},
		})
		var list struct{ Keys []ledgerapi.KeyView }
		raw = e.json("GET", "/admin/keys", "", http.StatusOK, &list)
		if len(list.Keys) != 2 || list.Keys[0].Cache != nil || list.Keys[1].Cache == nil || list.Keys[1].Cache.TTL != time.Minute {
			t.Fatalf("the list: %s", raw)
		}
		var refused errorAnswer
		e.json("PATCH", "/admin/keys/cfg_app", `{"cache":null}`, http.StatusConflict, &refused)
	})
}

// TestBadKeyCache: a bad cache setting is 400 in the API's error form
// (type invalid_request_error, param naming the setting, a message
// starting with it), the same mistakes the configuration file refuses,
// and changes nothing.
func TestBadKeyCache(t *testing.T) {
	s := openSQLite(t)
	e := newEnv(t, s)
	var c keyAnswer
	e.json("POST", "/admin/keys", `{"name":"base","cache":{"ttl":"1m"}}`, http.StatusCreated, &c)
	tests := []badField{
		{"ttl negative", "PATCH", `{"cache":{"ttl":"-1s"}}`, "cache.ttl"},
		{"ttl without a unit", "POST", `{"name":"a","cache":{"ttl":"10"}}`, "cache.ttl"},
		{"ttl a number", "PATCH", `{"cache":{"ttl":600}}`, "cache.ttl"},
		{"max_wait unreadable", "PATCH", `{"cache":{"max_wait":"a while"}}`, "cache.max_wait"},
		{"max_entry unreadable", "PATCH", `{"cache":{"max_entry":"big"}}`, "cache.max_entry"},
		{"max_entry too large", "POST", `{"name":"a","cache":{"max_entry":"2048GiB"}}`, "cache.max_entry"},
		{"max_entry negative", "PATCH", `{"cache":{"max_entry":-1}}`, "cache.max_entry"},
		{"coalesce a string", "PATCH", `{"cache":{"coalesce":"on"}}`, "cache.coalesce"},
		{"shared on a key", "PATCH", `{"cache":{"ttl":"1m","shared":true}}`, "cache.shared"},
		{"unknown setting", "POST", `{"name":"a","cache":{"ttl":"1m","temperature":0}}`, "cache.temperature"},
		{"a word", "PATCH", `{"cache":"always"}`, "cache"},
		{"a list", "PATCH", `{"cache":["ttl=1m"]}`, "cache"},
		{"the command line's form", "PATCH", `{"cache":"ttl=1m"}`, "cache"},
	}
	e.refusesBadFields(t, c.Key.ID, tests)
	ks, _ := s.Keys(t.Context())
	if len(ks) != 1 || !reflect.DeepEqual(ks[0].Cache, c.Key.Cache) {
		b, _ := json.Marshal(ks)
		t.Fatalf("after bad input the keys are %s; want only the first, its cache unchanged", b)
	}
	if n := e.changes.Load(); n != 1 {
		t.Fatalf("OnChange called %d times, want 1 (the first create)", n)
	}
}
