package ledgerapi_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

// TestUsageRequests: the request logs page newest first through
// next_cursor to the end, filter, and answer CSV.
func TestUsageRequests(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		recs := slices.Clone(usageRecords)
		recs[0].Tags = []string{"prod", "team-a"}
		recs[2].Tags = []string{"prod"}
		recs[3].Estimated = true
		if err := s.RecordUsage(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s)
		var seen []string
		path := "/admin/usage/requests?limit=3"
		for range 3 {
			var a ledgerapi.Requests
			e.json("GET", path, "", http.StatusOK, &a)
			for _, r := range a.Requests {
				seen = append(seen, r.RequestID)
			}
			if a.NextCursor == "" {
				break
			}
			path = "/admin/usage/requests?limit=3&cursor=" + url.QueryEscape(a.NextCursor)
		}
		if want := []string{"r4", "r3", "r2", "r1"}; !slices.Equal(seen, want) {
			t.Fatalf("pages gave %v, want %v", seen, want)
		}
		var a ledgerapi.Requests
		e.json("GET", "/admin/usage/requests?tag=prod&from=2026-12-01", "", http.StatusOK, &a)
		if len(a.Requests) != 1 || a.Requests[0].RequestID != "r3" || !slices.Equal(a.Requests[0].Tags, []string{"prod"}) ||
			!a.Requests[0].Failover || a.Requests[0].Key != "key_2" || a.NextCursor != "" {
			t.Fatalf("tag=prod from 2026-12-01: %+v", a)
		}
		code, raw := e.do("GET", "/admin/usage/requests?key=key_1&status=2xx&model=gpt-4o&format=csv", "")
		want := `time,request_id,key,team,tags,pool,backend,model,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd,estimated,status,failover,end_user,cache,saved_usd,tried,hedge,duration_ms,first_byte_ms,unanswered
2026-12-01T08:00:00Z,r2,key_1,research,,chat,aoai-se,gpt-4o,500,50,0,0,0.005,false,200,false,,,0,0,,0,0,false
2026-11-30T12:00:00Z,r1,key_1,research,prod team-a,chat,aoai-se,gpt-4o,1000,200,100,0,0.0125,false,200,false,,,0,0,,0,0,false
`
		if code != http.StatusOK || string(raw) != want {
			t.Fatalf("csv = %d\n%s\nwant\n%s", code, raw, want)
		}
		e.json("GET", "/admin/usage/requests?limit=1000", "", http.StatusOK, &a) // the largest page
		if len(a.Requests) != 4 || a.NextCursor != "" {
			t.Fatalf("limit=1000: %+v", a)
		}
		e.json("GET", "/admin/usage/requests?team=research&limit=1", "", http.StatusOK, &a)
		if len(a.Requests) != 1 || a.Requests[0].RequestID != "r4" || !a.Requests[0].Estimated || a.NextCursor == "" {
			t.Fatalf("team=research limit=1: %+v", a)
		}
	})
}

// TestUsageRequestsBadInput: bad cursors, limits and filters are a 400
// whose message starts with the parameter.
func TestUsageRequestsBadInput(t *testing.T) {
	e := newEnv(t, openSQLite(t))
	b64 := func(s string) string { return "c1." + base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for query, field := range map[string]string{
		"cursor=garbage":                        "cursor:",
		"cursor=c1.%21%21":                      "cursor:",
		"cursor=" + b64("12345"):                "cursor:",
		"cursor=" + b64("abc,r1"):               "cursor:",
		"cursor=" + b64("-5,r1"):                "cursor:",
		"cursor=" + b64("5,"):                   "cursor:",
		"cursor=c1." + strings.Repeat("A", 600): "cursor:",
		"limit=0":                               "limit:",
		"limit=1001":                            "limit:",
		"limit=ten":                             "limit:",
		"status=600":                            "status:",
		"status=6xx":                            "status:",
		"status=oops":                           "status:",
		"from=yesterday":                        "from:",
		"from=2026-12-02&to=2026-12-01":         "to:",
		"tag=a%20b":                             "tag:",
		"key=a%00b":                             "key:",
		"model=" + strings.Repeat("m", 300):     "model:",
		"format=xml":                            "format:",
	} {
		var a errorAnswer
		e.json("GET", "/admin/usage/requests?"+query, "", http.StatusBadRequest, &a)
		if !strings.HasPrefix(a.Error.Message, field) {
			t.Errorf("?%s: %q does not start with %s", query, a.Error.Message, field)
		}
	}
}
