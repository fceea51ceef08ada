package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
)

// postAs posts a chat call of end user user ("" for none) with key.
func postAs(t *testing.T, url, key, user string) (int, []byte) {
	t.Helper()
	body := chatBody
	if user != "" {
		body = strings.Replace(chatBody, `"model"`, fmt.Sprintf(`"user":%q,"model"`, user), 1)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// admitted posts alice's (or who's) nth request until it is admitted:
// while its spend is read from the store, an end user's request may be
// refused for a moment (429 rate_limit_exceeded on its budget).
func admitted(t *testing.T, url, key, who string, n int) {
	t.Helper()
	var code int
	var b []byte
	poll.Until(t, 10*time.Second, func() bool {
		code, b = postAs(t, url, key, who)
		var rb refusalBody
		json.Unmarshal(b, &rb)
		if code != http.StatusOK && (code != http.StatusTooManyRequests || rb.Error.Code != "rate_limit_exceeded" || rb.Error.Limit.Limit != "budget") {
			t.Fatalf("%q's request %d: %d %s", who, n, code, b)
		}
		return code == http.StatusOK
	}, func() string { return fmt.Sprintf("%q's request %d: %d %s", who, n, code, b) })
}

// TestEndUserBudgetOnBothStores: a team's end_user_limits budget (three
// calls' worth a day) holds each end user of its keys, a store key's
// included, to its own spend; the usage store keeps the end user; and a
// replica that starts later counts what the store recorded: after at
// most the one request admitted before it read the end user's spend, it
// refuses her too.
func TestEndUserBudgetOnBothStores(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			extra := st.yaml(t) + fmt.Sprintf("teams:\n  - {name: apps, end_user_limits: {budget: %v/day}}\n", 3*perCall)
			e := startProvidersWith(t, []string{"openai"}, nil, extra, outputPriced)
			key, secret, err := ledger.NewKey(t.Context(), e.gw.Ledger(), ledger.Key{Name: "app", Team: "apps"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				admitted(t, e.url, secret, "alice@example.com", i+1)
			}
			code, b := postAs(t, e.url, secret, "alice@example.com")
			var rb refusalBody
			json.Unmarshal(b, &rb)
			if code != http.StatusTooManyRequests || rb.Error.Code != "budget_exceeded" || rb.Error.Limit.Subject != "end_user" ||
				rb.Error.Limit.Name != "alice@example.com" || rb.Error.Limit.Used != 3*perCall {
				t.Fatalf("alice's 4th request, her budget spent: %d %s", code, b)
			}
			for _, who := range []string{"bob", ""} {
				admitted(t, e.url, secret, who, 1)
			}
			spend(t, e.gw.Ledger(), key.ID, 5)
			day := time.Now().UTC().Truncate(24 * time.Hour)
			rows, err := e.gw.Ledger().Spend(t.Context(), ledger.SpendQuery{From: day, To: day.AddDate(0, 0, 1), By: []string{ledger.ByEndUser}})
			if err != nil || len(rows) != 3 || rows[1].EndUser != "alice@example.com" || rows[1].Requests != 3 || rows[2].EndUser != "bob" {
				t.Fatalf("usage by end user: %+v, %v", rows, err)
			}
			if strings.Contains(e.logs.String(), "alice") {
				t.Fatal("the log names the end user")
			}

			// A second replica on the same store.
			e2 := startProvidersWith(t, []string{"openai"}, nil, extra, outputPriced)
			admitted := 0
			poll.Until(t, 10*time.Second, func() bool {
				code, b := postAs(t, e2.url, secret, "alice@example.com")
				switch code {
				case http.StatusOK:
					admitted++
				case http.StatusTooManyRequests:
					rb = refusalBody{}
					json.Unmarshal(b, &rb)
					return rb.Error.Code == "budget_exceeded" && rb.Error.Limit.Used >= 3*perCall
				default:
					t.Fatalf("alice on the second replica: %d %s", code, b)
				}
				return false
			}, func() string { return "the second replica never refused alice" })
			if admitted > 1 {
				t.Fatalf("the second replica admitted %d of alice's requests past her budget, want at most 1", admitted)
			}
			ctx := context.Background()
			if rows, _ := e2.gw.Ledger().Spend(ctx, ledger.SpendQuery{From: day, To: day.AddDate(0, 0, 1), EndUser: "bob"}); len(rows) != 1 || rows[0].Requests != 1 {
				t.Fatalf("bob's usage: %+v", rows)
			}
		})
	}
}
