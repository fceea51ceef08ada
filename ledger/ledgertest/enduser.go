package ledgertest

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// testEndUsers: records keep their end user; spend is grouped by it and
// filtered to one, over whole days too (which the daily sums cannot
// answer), and the same end user of two keys is told apart by key.
func testEndUsers(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	d := day(2)
	long := strings.Repeat("é", ledger.MaxEndUser/2) // 256 bytes, the most kept
	batch := []ledger.Usage{
		{At: d.Add(time.Hour), RequestID: "e1", KeyID: "A", Team: "T1", Model: "m", EndUser: "alice@example.com", Tags: []string{"prod"}, PromptTokens: 10, Cost: 0.001},
		{At: d.Add(2 * time.Hour), RequestID: "e2", KeyID: "A", Team: "T1", Model: "m", EndUser: "alice@example.com", PromptTokens: 20, Cost: 0.002},
		{At: d.Add(3 * time.Hour), RequestID: "e3", KeyID: "A", Team: "T1", Model: "m", EndUser: "bob", PromptTokens: 30, Cost: 0.004},
		{At: d.Add(4 * time.Hour), RequestID: "e4", KeyID: "B", Team: "T1", Model: "m", EndUser: "alice@example.com", PromptTokens: 40, Cost: 0.008},
		{At: d.Add(5 * time.Hour), RequestID: "e5", KeyID: "B", Team: "T1", Model: "m", PromptTokens: 50, Cost: 0.016},
		{At: d.AddDate(0, 0, 1), RequestID: "e6", KeyID: "B", Model: "m", EndUser: long, PromptTokens: 60, Cost: 0.032},
	}
	if err := s.RecordUsage(ctx, batch); err != nil {
		t.Fatal(err)
	}
	week := ledger.SpendQuery{From: day(2), To: day(9)}
	with := func(f func(*ledger.SpendQuery)) ledger.SpendQuery { q := week; f(&q); return q }
	tests := []struct {
		name string
		q    ledger.SpendQuery
		want []ledger.SpendRow
	}{
		{"by end user", with(func(q *ledger.SpendQuery) { q.By = []string{ledger.ByEndUser} }), []ledger.SpendRow{
			{Requests: 1, PromptTokens: 50, Cost: 0.016},
			{EndUser: "alice@example.com", Requests: 3, PromptTokens: 70, Cost: 0.011},
			{EndUser: "bob", Requests: 1, PromptTokens: 30, Cost: 0.004},
			{EndUser: long, Requests: 1, PromptTokens: 60, Cost: 0.032}}},
		{"by key and end user", with(func(q *ledger.SpendQuery) { q.By = []string{ledger.ByKey, ledger.ByEndUser}; q.Team = "T1" }), []ledger.SpendRow{
			{Key: "A", EndUser: "alice@example.com", Requests: 2, PromptTokens: 30, Cost: 0.003},
			{Key: "A", EndUser: "bob", Requests: 1, PromptTokens: 30, Cost: 0.004},
			{Key: "B", Requests: 1, PromptTokens: 50, Cost: 0.016},
			{Key: "B", EndUser: "alice@example.com", Requests: 1, PromptTokens: 40, Cost: 0.008}}},
		{"one end user, whole days", with(func(q *ledger.SpendQuery) { q.EndUser = "alice@example.com" }), []ledger.SpendRow{
			{Requests: 3, PromptTokens: 70, Cost: 0.011}}},
		{"one end user of one key, by day", with(func(q *ledger.SpendQuery) { q.EndUser, q.Key, q.By = "alice@example.com", "B", []string{ledger.ByDay} }), []ledger.SpendRow{
			{Day: day(2), Requests: 1, PromptTokens: 40, Cost: 0.008}}},
		{"one end user, hours", ledger.SpendQuery{From: d.Add(90 * time.Minute), To: d.Add(10 * time.Hour), EndUser: "alice@example.com"}, []ledger.SpendRow{
			{Requests: 2, PromptTokens: 60, Cost: 0.01}}},
		{"one end user of one tag", with(func(q *ledger.SpendQuery) { q.EndUser, q.Tag = "alice@example.com", "prod" }), []ledger.SpendRow{
			{Requests: 1, PromptTokens: 10, Cost: 0.001}}},
		{"by tag and end user, one key", with(func(q *ledger.SpendQuery) { q.By, q.Key = []string{ledger.ByTag, ledger.ByEndUser}, "A" }), []ledger.SpendRow{
			{EndUser: "alice@example.com", Requests: 1, PromptTokens: 20, Cost: 0.002},
			{EndUser: "bob", Requests: 1, PromptTokens: 30, Cost: 0.004},
			{Tag: "prod", EndUser: "alice@example.com", Requests: 1, PromptTokens: 10, Cost: 0.001}}},
		{"an end user of none", with(func(q *ledger.SpendQuery) { q.EndUser = "carol" }), []ledger.SpendRow{{}}},
		{"without end users, by key: the daily sums agree", with(func(q *ledger.SpendQuery) { q.By = []string{ledger.ByKey} }), []ledger.SpendRow{
			{Key: "A", Requests: 3, PromptTokens: 60, Cost: 0.007},
			{Key: "B", Requests: 3, PromptTokens: 150, Cost: 0.056}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Spend(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Spend(%+v) =\n%s\nwant\n%s", tc.q, rows(got), rows(tc.want))
			}
		})
	}
}
