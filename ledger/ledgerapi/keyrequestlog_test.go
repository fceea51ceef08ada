package ledgerapi_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

// TestKeyRequestLog: a key's own request_log through the admin API on
// SQLite and PostgreSQL: set on creation, shown, changed, turned off (an
// own false), left alone by another change, removed with null and with
// "none"; the store keeps what the API showed, and a configuration
// file's key shows its own.
func TestKeyRequestLog(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		on, off := true, false
		e := newEnv(t, s, func(h *ledgerapi.Handler) {
			h.Static = func() []ledger.Key {
				return []ledger.Key{{ID: "cfg_app", Name: "app", RequestLog: &ledger.KeyRequestLog{Bodies: &on}}}
			}
		})
		var c keyAnswer
		raw := e.json("POST", "/admin/keys", `{"name":"app","request_log":{"bodies":true,"max_body_bytes":4096}}`, http.StatusCreated, &c)
		want := &ledger.KeyRequestLog{Bodies: &on, MaxBodyBytes: 4096}
		if !reflect.DeepEqual(c.Key.RequestLog, want) || !strings.Contains(string(raw), `"max_body_bytes": 4096`) {
			t.Fatalf("created %s; want the request log %+v", raw, want)
		}
		patchSteps(t, e, s, c, func(k ledger.Key) *ledger.KeyRequestLog { return k.RequestLog }, want, []patchStep[*ledger.KeyRequestLog]{
			{"left alone by another change", `{"rpm":5}`, want},
			{"off, whatever the pools say", `{"request_log":{"bodies":false}}`, &ledger.KeyRequestLog{Bodies: &off}},
			{"removed with null", `{"request_log":null}`, nil},
			{"a size, bodies as the pools say", `{"request_log":{"max_body_bytes":"1MiB"}}`, &ledger.KeyRequestLog{MaxBodyBytes: 1 << 20}},
			{"removed with none", `{"request_log":"none"}`, nil},
			{"an empty object: the pools' (kept as said)", `{"request_log":{}}`, &ledger.KeyRequestLog{}},
		})
		var list struct{ Keys []ledgerapi.KeyView }
		raw = e.json("GET", "/admin/keys", "", http.StatusOK, &list)
		if len(list.Keys) != 2 || list.Keys[0].RequestLog == nil || list.Keys[0].RequestLog.BodiesOn() || !list.Keys[1].RequestLog.BodiesOn() {
			t.Fatalf("the list: %s; want the stored key's {} and the configuration's key with bodies", raw)
		}
		var refused errorAnswer
		e.json("PATCH", "/admin/keys/cfg_app", `{"request_log":null}`, http.StatusConflict, &refused)
	})
}

// TestBadKeyRequestLog: a bad request_log is 400 in the API's error form
// (type invalid_request_error, param naming the setting, a message
// starting with it) and changes nothing.
func TestBadKeyRequestLog(t *testing.T) {
	s := openSQLite(t)
	e := newEnv(t, s)
	var c keyAnswer
	e.json("POST", "/admin/keys", `{"name":"base","request_log":{"bodies":true}}`, http.StatusCreated, &c)
	tests := []badField{
		{"bodies a string", "PATCH", `{"request_log":{"bodies":"yes"}}`, "request_log.bodies"},
		{"bodies a number", "POST", `{"name":"a","request_log":{"bodies":1}}`, "request_log.bodies"},
		{"max_body_bytes too large", "PATCH", `{"request_log":{"max_body_bytes":1048577}}`, "request_log.max_body_bytes"},
		{"max_body_bytes too large as a size", "POST", `{"name":"a","request_log":{"max_body_bytes":"2MiB"}}`, "request_log.max_body_bytes"},
		{"max_body_bytes zero", "PATCH", `{"request_log":{"max_body_bytes":0}}`, "request_log.max_body_bytes"},
		{"max_body_bytes negative", "PATCH", `{"request_log":{"max_body_bytes":-1}}`, "request_log.max_body_bytes"},
		{"max_body_bytes a fraction", "PATCH", `{"request_log":{"max_body_bytes":1.5}}`, "request_log.max_body_bytes"},
		{"max_body_bytes unreadable", "PATCH", `{"request_log":{"max_body_bytes":"big"}}`, "request_log.max_body_bytes"},
		{"unknown setting", "POST", `{"name":"a","request_log":{"bodies":true,"headers":true}}`, "request_log.headers"},
		{"a word", "PATCH", `{"request_log":"always"}`, "request_log"},
		{"true alone", "PATCH", `{"request_log":true}`, "request_log"},
		{"a list", "PATCH", `{"request_log":["bodies"]}`, "request_log"},
	}
	e.refusesBadFields(t, c.Key.ID, tests)
	ks, _ := s.Keys(t.Context())
	if len(ks) != 1 || !reflect.DeepEqual(ks[0].RequestLog, c.Key.RequestLog) {
		t.Fatalf("after bad input the keys are %+v; want only the first, its request log unchanged", ks)
	}
	if n := e.changes.Load(); n != 1 {
		t.Fatalf("OnChange called %d times, want 1 (the first create)", n)
	}
}
