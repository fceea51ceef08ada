package ledgerapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

// TestUsageRequestsEndUser: the request logs show each request's end
// user and keep one with ?end_user=, on both stores; an end user longer
// than any kept is refused.
func TestUsageRequestsEndUser(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		if err := s.RecordUsage(t.Context(), []ledger.Usage{
			{At: at("2026-12-01T08:00:00Z"), RequestID: "u1", KeyID: "key_1", Model: "m", EndUser: "alice@example.com", Status: 200},
			{At: at("2026-12-01T09:00:00Z"), RequestID: "u2", KeyID: "key_2", Model: "m", EndUser: "bob", Status: 200},
			{At: at("2026-12-01T10:00:00Z"), RequestID: "u3", KeyID: "key_1", Model: "m", Status: 200},
			{At: at("2026-12-01T11:00:00Z"), RequestID: "u4", KeyID: "key_2", Model: "m", EndUser: "alice@example.com", Status: 429},
		}); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, s)
		var a ledgerapi.Requests
		e.json("GET", "/admin/usage/requests", "", http.StatusOK, &a)
		var got []string
		for _, r := range a.Requests {
			got = append(got, r.RequestID+":"+r.EndUser)
		}
		if want := "u4:alice@example.com u3: u2:bob u1:alice@example.com"; strings.Join(got, " ") != want {
			t.Fatalf("end users %q, want %q", strings.Join(got, " "), want)
		}
		alice := url.QueryEscape("alice@example.com")
		e.json("GET", "/admin/usage/requests?end_user="+alice+"&status=2xx", "", http.StatusOK, &a)
		if len(a.Requests) != 1 || a.Requests[0].RequestID != "u1" || a.Requests[0].EndUser != "alice@example.com" {
			t.Fatalf("end_user=alice status=2xx: %+v", a.Requests)
		}
		code, raw := e.do("GET", "/admin/usage/requests?end_user=bob&format=csv", "")
		if code != http.StatusOK || !strings.HasSuffix(string(raw), ",m,0,0,0,0,0,false,200,false,bob,,0,0,,0,0,false\n") ||
			!strings.HasPrefix(string(raw), "time,") || !strings.Contains(string(raw), ",failover,end_user,cache,saved_usd,tried,hedge,duration_ms,first_byte_ms,unanswered\n") {
			t.Fatalf("end_user=bob csv = %d\n%s", code, raw)
		}
		var bad errorAnswer
		e.json("GET", "/admin/usage/requests?end_user="+strings.Repeat("x", ledger.MaxEndUser+1), "", http.StatusBadRequest, &bad)
		if !strings.HasPrefix(bad.Error.Message, "end_user:") {
			t.Errorf("an end user of %d bytes: %q", ledger.MaxEndUser+1, bad.Error.Message)
		}
	})
}

// TestCSVFormulaCellsEscaped: a model, end user, team or key name that
// starts with = + - @ (all chosen by callers or admins) reaches both CSV
// answers as text, not as a spreadsheet formula.
func TestCSVFormulaCellsEscaped(t *testing.T) {
	s := openSQLite(t)
	e := newEnv(t, s)
	if err := s.RecordUsage(t.Context(), []ledger.Usage{
		{At: at("2026-12-01T08:00:00Z"), RequestID: "f1", KeyID: "-key", Team: "@team", Model: `=HYPERLINK("http://x")`,
			EndUser: "+1 555 0100", PromptTokens: 1, Cost: 0.5, Status: 200},
	}); err != nil {
		t.Fatal(err)
	}
	code, raw := e.do("GET", "/admin/usage/requests?format=csv", "")
	wantRow := `2026-12-01T08:00:00Z,f1,'-key,'@team,,,,"'=HYPERLINK(""http://x"")",1,0,0,0,0.5,false,200,false,'+1 555 0100,,0,0,,0,0,false` + "\n"
	if code != http.StatusOK || !strings.HasSuffix(string(raw), wantRow) {
		t.Fatalf("request logs csv = %d\n%s\nwant the row\n%s", code, raw, wantRow)
	}
	code, raw = e.do("GET", "/admin/usage?from=2026-12-01&to=2026-12-02&by=key,team,model,end_user&format=csv", "")
	wantRow = `'-key,'@team,"'=HYPERLINK(""http://x"")",'+1 555 0100,1,0,1,0,0,0,0.5` + "\n"
	if code != http.StatusOK || !strings.HasSuffix(string(raw), wantRow) {
		t.Fatalf("usage csv = %d\n%s\nwant the row\n%s", code, raw, wantRow)
	}
}
