package ledgerapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

// TestRequestLog: GET /admin/usage/requests filters by pool, tried
// backend, failover, cache and text, and GET /admin/usage/requests/{id}
// answers one request with its attempts, 404 for an unknown id.
func TestRequestLog(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		recs := []ledger.Usage{
			{At: at("2026-12-01T08:00:00Z"), RequestID: "q1", KeyID: "key_1", Pool: "chat", Backend: "weu", Model: "gpt-4o", Status: 200,
				Tried: 1, DurationMs: 800, FirstByteMs: 300, Attempts: []ledger.Attempt{{Backend: "weu", Status: 200, Reason: "ok", DurationMs: 300}}},
			{At: at("2026-12-01T08:01:00Z"), RequestID: "q2", KeyID: "key_2", Pool: "chat", Backend: "sec", Model: "gpt-4o", Status: 200,
				Failover: true, Tried: 2, EndUser: "alice", Attempts: []ledger.Attempt{{Backend: "weu", Status: 429, Reason: "rate_limited", DurationMs: 500},
					{Backend: "sec", Status: 200, Reason: "ok", StartMs: 501, DurationMs: 400}}},
			{At: at("2026-12-01T08:02:00Z"), RequestID: "q3", KeyID: "key_1", Pool: "chat", Model: "gpt-4o", Status: 502, Unanswered: true,
				Tried: 1, Attempts: []ledger.Attempt{{Backend: "weu", Reason: "timeout", DurationMs: 3000}}},
			{At: at("2026-12-01T08:03:00Z"), RequestID: "q4", KeyID: "key_1", Pool: "embed", Backend: "weu", Model: "emb", Status: 200, Cache: "hit"},
		}
		if err := s.RecordUsage(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s)
		for query, want := range map[string][]string{
			"backend=weu":              {"q4", "q3", "q2", "q1"},
			"backend=sec":              {"q2"},
			"backend=weu&failover=yes": {"q2"},
			"failover=no&pool=chat":    {"q3", "q1"},
			"cache=hit":                {"q4"},
			"cache=none&status=error":  {"q3"},
			"q=q2":                     {"q2"},
			"q=alice":                  {"q2"},
			"q=emb":                    {"q4"},
			"pool=embed":               {"q4"},
			"backend=weu&from=2026-12-01T08:01:00Z&to=2026-12-01T08:03:00Z": {"q3", "q2"},
		} {
			var a ledgerapi.Requests
			e.json("GET", "/admin/usage/requests?"+query, "", http.StatusOK, &a)
			var got []string
			for _, r := range a.Requests {
				got = append(got, r.RequestID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("?%s = %v, want %v", query, got, want)
			}
		}
		var d ledgerapi.RequestDetail
		e.json("GET", "/admin/usage/requests/q2", "", http.StatusOK, &d)
		if r := d.Request; r.RequestID != "q2" || r.Tried != 2 || len(r.Attempts) != 2 || r.Attempts[0].Reason != "rate_limited" ||
			r.Attempts[1].StartMs != 501 || r.EndUser != "alice" || !r.Failover {
			t.Fatalf("GET /admin/usage/requests/q2 = %+v", r)
		}
		e.json("GET", "/admin/usage/requests/q3", "", http.StatusOK, &d)
		if r := d.Request; !r.Unanswered || r.Backend != "" || r.Status != 502 || len(r.Attempts) != 1 {
			t.Fatalf("the unanswered q3 = %+v", r)
		}
		var a errorAnswer
		e.json("GET", "/admin/usage/requests/nope", "", http.StatusNotFound, &a)
		if !strings.Contains(a.Error.Message, `"nope"`) {
			t.Errorf("404: %q", a.Error.Message)
		}
		e.json("GET", "/admin/usage/requests/"+strings.Repeat("x", 300), "", http.StatusBadRequest, &a)
		for query, field := range map[string]string{
			"failover=maybe":                      "failover:",
			"cache=miss":                          "cache:",
			"q=" + strings.Repeat("x", 300):       "q:",
			"backend=" + strings.Repeat("b", 300): "backend:",
			"pool=a%01b":                          "pool:",
		} {
			e.json("GET", "/admin/usage/requests?"+query, "", http.StatusBadRequest, &a)
			if !strings.HasPrefix(a.Error.Message, field) {
				t.Errorf("?%.40s: %q, want it to start with %q", query, a.Error.Message, field)
			}
		}
	})
}
