package ledgerapi_test

import (
	"net/http"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

// TestUsageByHour: GET /admin/usage?by=hour sums each UTC hour, alone
// and with other groupings, on both stores.
func TestUsageByHour(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		if err := s.RecordUsage(t.Context(), usageRecords); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s)
		tests := []struct{ name, query, want string }{
			{"by hour", "?from=2026-12-01&to=2026-12-02&by=hour&format=csv", `hour,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
2026-12-01T08:00:00Z,1,0,500,50,0,0,0.005
2026-12-01T09:00:00Z,2,1,5000,1000,0,300,0.03506
`},
			{"by key and hour, over parts of days", "?from=2026-11-30T12:00:00Z&to=2026-12-01T09:15:00Z&by=key,hour&format=csv", `key,hour,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
key_1,2026-11-30T12:00:00Z,1,0,1000,200,100,0,0.0125
key_1,2026-12-01T08:00:00Z,1,0,500,50,0,0,0.005
key_2,2026-12-01T09:00:00Z,1,1,2000,1000,0,300,0.035
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
		var a struct {
			Rows []struct {
				Hour     string `json:"hour"`
				Requests int64  `json:"requests"`
			} `json:"rows"`
		}
		e.json("GET", "/admin/usage?from=2026-12-01&to=2026-12-02&by=hour&key=key_1", "", http.StatusOK, &a)
		if len(a.Rows) != 2 || a.Rows[0].Hour != "2026-12-01T08:00:00Z" || a.Rows[1].Hour != "2026-12-01T09:00:00Z" || a.Rows[1].Requests != 1 {
			t.Fatalf("by=hour&key=key_1 JSON rows: %+v", a.Rows)
		}
	})
}
