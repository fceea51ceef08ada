package ledgerapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// usageRecords are four requests over two days, two teams and two
// backends, one failed over; the handler's clock is 2026-12-01 10:00.
var usageRecords = []ledger.Usage{
	{At: at("2026-11-30T12:00:00Z"), RequestID: "r1", KeyID: "key_1", Team: "research", Pool: "chat", Backend: "aoai-se",
		Model: "gpt-4o", PromptTokens: 1000, CompletionTokens: 200, CachedTokens: 100, Cost: 0.0125, Status: 200},
	{At: at("2026-12-01T08:00:00Z"), RequestID: "r2", KeyID: "key_1", Team: "research", Pool: "chat", Backend: "aoai-se",
		Model: "gpt-4o", PromptTokens: 500, CompletionTokens: 50, Cost: 0.005, Status: 200},
	{At: at("2026-12-01T09:00:00Z"), RequestID: "r3", KeyID: "key_2", Team: "infra", Pool: "chat", Backend: "openai-paygo",
		Model: "gpt-4o", PromptTokens: 2000, CompletionTokens: 1000, ReasoningTokens: 300, Cost: 0.035, Status: 200, Failover: true},
	{At: at("2026-12-01T09:30:00Z"), RequestID: "r4", KeyID: "key_1", Team: "research", Pool: "embed", Backend: "aoai-se",
		Model: "text-embedding-3-small", PromptTokens: 3000, Cost: 0.00006, Status: 200},
}

// TestUsage: golden sums in JSON and CSV over the daily sums and over
// the requests, grouped and filtered.
func TestUsage(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		if err := s.RecordUsage(t.Context(), usageRecords); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s)
		tests := []struct{ name, query, want string }{
			{"default: this month to tomorrow, by team", "?by=team", `{
  "from": "2026-12-01T00:00:00Z",
  "to": "2026-12-02T00:00:00Z",
  "by": [
    "team"
  ],
  "rows": [
    {
      "team": "infra",
      "requests": 1,
      "failovers": 1,
      "prompt_tokens": 2000,
      "completion_tokens": 1000,
      "cached_tokens": 0,
      "reasoning_tokens": 300,
      "cost": 0.035
    },
    {
      "team": "research",
      "requests": 2,
      "failovers": 0,
      "prompt_tokens": 3500,
      "completion_tokens": 50,
      "cached_tokens": 0,
      "reasoning_tokens": 0,
      "cost": 0.00506
    }
  ],
  "total": {
    "requests": 3,
    "failovers": 1,
    "prompt_tokens": 5500,
    "completion_tokens": 1050,
    "cached_tokens": 0,
    "reasoning_tokens": 300,
    "cost": 0.04006
  }
}
`},
			{"no grouping: one total row", "?from=2026-11-01&format=json", `{
  "from": "2026-11-01T00:00:00Z",
  "to": "2026-12-02T00:00:00Z",
  "by": [],
  "rows": [
    {
      "requests": 4,
      "failovers": 1,
      "prompt_tokens": 6500,
      "completion_tokens": 1250,
      "cached_tokens": 100,
      "reasoning_tokens": 300,
      "cost": 0.05256
    }
  ],
  "total": {
    "requests": 4,
    "failovers": 1,
    "prompt_tokens": 6500,
    "completion_tokens": 1250,
    "cached_tokens": 100,
    "reasoning_tokens": 300,
    "cost": 0.05256
  }
}
`},
			{"csv by backend and day", "?from=2026-11-30&by=backend,day&format=csv", `backend,day,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
aoai-se,2026-11-30,1,0,1000,200,100,0,0.0125
aoai-se,2026-12-01,2,0,3500,50,0,0,0.00506
openai-paygo,2026-12-01,1,1,2000,1000,0,300,0.035
`},
			{"csv by team and day, one key", "?from=2026-11-01&to=2026-12-02&by=team,day,team&key=key_1&format=csv", `team,day,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
research,2026-11-30,1,0,1000,200,100,0,0.0125
research,2026-12-01,2,0,3500,50,0,0,0.00506
`},
			{"csv over requests (RFC 3339 bounds), by model, one team", "?from=2026-12-01T08:30:00Z&to=2026-12-01T10:00:00Z&by=model&team=research&format=csv", `model,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
text-embedding-3-small,1,0,3000,0,0,0,0.00006
`},
			{"csv by key and team, by repeated (only the first was used)", "?by=key&by=team&format=csv", `key,team,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
key_1,research,2,0,3500,50,0,0,0.00506
key_2,infra,1,1,2000,1000,0,300,0.035
`},
			{"csv with nothing", "?from=2026-10-01&to=2026-11-01&by=key&format=csv", `key,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
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
	})
}

func TestUsageBadInput(t *testing.T) {
	e := newEnv(t, openSQLite(t))
	for query, field := range map[string]string{
		"?by=region":                        "by:",
		"?by=team,minute":                   "by:",
		"?by=team&by=week":                  "by:",
		"?from=yesterday":                   "from:",
		"?to=2026-13-01":                    "to:",
		"?from=2026-12-01&to=2026-12-01":    "to:",
		"?from=2026-12-02&to=2026-12-01":    "to:",
		"?format=xml":                       "format:",
		"?from=2026-12-01T00:00:00&by=team": "from:", // no zone
	} {
		var a errorAnswer
		e.json("GET", "/admin/usage"+query, "", http.StatusBadRequest, &a)
		if !strings.HasPrefix(a.Error.Message, field) {
			t.Errorf("GET /admin/usage%s: %q does not start with %s", query, a.Error.Message, field)
		}
	}
}

// TestGroupingsIsACopy: changing what Groupings returned does not change
// the next answer (it was a package variable anyone could overwrite).
func TestGroupingsIsACopy(t *testing.T) {
	want := []string{ledger.ByKey, ledger.ByTeam, ledger.ByPool, ledger.ByBackend, ledger.ByModel, ledger.ByDay, ledger.ByHour, ledger.ByTag, ledger.ByEndUser}
	g := ledgerapi.Groupings()
	if !slices.Equal(g, want) {
		t.Fatalf("Groupings() = %v, want %v", g, want)
	}
	g[0] = "region"
	if g := ledgerapi.Groupings(); !slices.Equal(g, want) {
		t.Fatalf("after changing a returned slice, Groupings() = %v, want %v", g, want)
	}
}

// TestUsageRepeatedByUsedOnlyTheFirst is the regression test of issue
// 24's item 6: GET /admin/usage?by=key&by=team grouped by key alone.
func TestUsageRepeatedByUsedOnlyTheFirst(t *testing.T) {
	s := openSQLite(t)
	if err := s.RecordUsage(t.Context(), usageRecords); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, s)
	var u ledgerapi.Usage
	e.json("GET", "/admin/usage?by=key&by=team", "", http.StatusOK, &u)
	if !slices.Equal(u.By, []string{"key", "team"}) || len(u.Rows) != 2 || u.Rows[0].Team != "research" || u.Rows[1].Team != "infra" {
		t.Fatalf("by=key&by=team answered by %v, rows %+v", u.By, u.Rows)
	}
}
