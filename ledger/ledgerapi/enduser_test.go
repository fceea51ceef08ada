package ledgerapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

// TestUsageByEndUser: GET /admin/usage groups by end user and keeps one,
// on both stores, over whole days (which the daily sums cannot answer)
// and hours; an end user longer than any kept is refused.
func TestUsageByEndUser(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		recs := []ledger.Usage{
			{At: at("2026-12-01T08:00:00Z"), RequestID: "u1", KeyID: "key_1", Model: "m", EndUser: "alice@example.com", PromptTokens: 10, Cost: 0.25},
			{At: at("2026-12-01T09:00:00Z"), RequestID: "u2", KeyID: "key_1", Model: "m", EndUser: "alice@example.com", PromptTokens: 20, Cost: 0.5},
			{At: at("2026-12-01T09:30:00Z"), RequestID: "u3", KeyID: "key_2", Model: "m", EndUser: "alice@example.com", PromptTokens: 40, Cost: 1},
			{At: at("2026-12-01T09:45:00Z"), RequestID: "u4", KeyID: "key_1", Model: "m", PromptTokens: 80, Cost: 2},
		}
		if err := s.RecordUsage(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s)
		alice := url.QueryEscape("alice@example.com")
		tests := []struct{ name, query, want string }{
			{"by key and end user", "?by=key,end_user&format=csv", `key,end_user,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
key_1,,1,0,80,0,0,0,2
key_1,alice@example.com,2,0,30,0,0,0,0.75
key_2,alice@example.com,1,0,40,0,0,0,1
`},
			{"one end user of one key", "?end_user=" + alice + "&key=key_1&format=csv", `requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
2,0,30,0,0,0,0.75
`},
			{"one end user, hours", "?from=2026-12-01T08:30:00Z&to=2026-12-01T10:00:00Z&end_user=" + alice + "&by=key&format=csv", `key,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
key_1,1,0,20,0,0,0,0.5
key_2,1,0,40,0,0,0,1
`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				code, raw := e.do("GET", "/admin/usage"+tc.query, "")
				if code != http.StatusOK || string(raw) != tc.want {
					t.Fatalf("GET /admin/usage%s = %d\n%s\nwant\n%s", tc.query, code, raw, tc.want)
				}
			})
		}
		var a errorAnswer
		e.json("GET", "/admin/usage?end_user="+strings.Repeat("x", ledger.MaxEndUser+1), "", http.StatusBadRequest, &a)
		if !strings.HasPrefix(a.Error.Message, "end_user:") {
			t.Errorf("an end user of %d bytes: %q", ledger.MaxEndUser+1, a.Error.Message)
		}
	})
}
