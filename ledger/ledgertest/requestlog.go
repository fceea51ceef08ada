package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// testRequestLog: a request's attempts, timings, hedge and cache read
// back as recorded (bounded to ledger.MaxAttempts); the log's filters by
// pool, tried backend, failover, cache and text; an unanswered request
// is logged and counted in no spend; the retention forgets its tried
// backends with it.
func testRequestLog(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	at := func(m int) time.Time { return day(3).Add(time.Duration(m) * time.Minute) }
	many := make([]ledger.Attempt, 20)
	for i := range many {
		many[i] = ledger.Attempt{Backend: fmt.Sprintf("m%02d", i), Status: 503, Reason: "server_error", StartMs: int64(i * 10), DurationMs: 9}
	}
	recs := []ledger.Usage{
		{At: at(1), RequestID: "l1", KeyID: "A", Team: "T1", Pool: "chat", Backend: "weu", Model: "gpt-4o", Status: 200,
			Cost: 0.01, PromptTokens: 10, DurationMs: 900, FirstByteMs: 300, Tried: 1,
			Attempts: []ledger.Attempt{{Backend: "weu", Status: 200, Reason: "ok", DurationMs: 300}}},
		{At: at(2), RequestID: "l2", KeyID: "B", Team: "T2", Pool: "chat", Backend: "sec", Model: "gpt-4o", Status: 200,
			Failover: true, EndUser: "alice", Cost: 0.02, DurationMs: 1500, FirstByteMs: 1200, Tried: 2,
			Attempts: []ledger.Attempt{{Backend: "weu", Status: 429, Reason: "rate_limited", DurationMs: 600},
				{Backend: "sec", Status: 200, Reason: "ok", StartMs: 601, DurationMs: 599}}},
		{At: at(3), RequestID: "l3", KeyID: "A", Team: "T1", Pool: "chat", Model: "gpt-4o", Status: 502, Unanswered: true,
			DurationMs: 400, Tried: 20, Attempts: many},
		{At: at(4), RequestID: "l4", KeyID: "A", Team: "T1", Pool: "embed", Backend: "weu", Model: "text-embedding-3", Status: 200,
			Cache: "hit", Saved: 0.5, DurationMs: 3},
		{At: at(5), RequestID: "l5", KeyID: "B", Team: "T2", Pool: "chat", Backend: "weu", Model: "gpt-4o", Status: 200,
			Hedge: "hedge", Tried: 2, DurationMs: 700, FirstByteMs: 650,
			Attempts: []ledger.Attempt{{Backend: "sec", Reason: "abandoned", DurationMs: 700, Abandoned: true},
				{Backend: "weu", Status: 200, Reason: "ok", StartMs: 400, DurationMs: 250, Hedge: true}}},
	}
	if err := s.RecordUsage(ctx, recs); err != nil {
		t.Fatal(err)
	}
	for _, want := range recs {
		got, err := s.Request(ctx, want.RequestID)
		want.At = want.At.UTC()
		if len(want.Attempts) > ledger.MaxAttempts {
			want.Attempts = want.Attempts[:ledger.MaxAttempts]
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Request(%s) = %v\n%+v\nrecorded\n%+v", want.RequestID, err, got, want)
		}
	}
	for _, id := range []string{"nope", "", strings.Repeat("x", 300)} {
		if _, err := s.Request(ctx, id); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Request(%.10q) = %v, want ErrNotFound", id, err)
		}
	}
	for name, tc := range map[string]struct {
		q    ledger.RequestQuery
		want []string
	}{
		"pool":                      {ledger.RequestQuery{Pool: "embed"}, []string{"l4"}},
		"backend answered or tried": {ledger.RequestQuery{Backend: "weu"}, []string{"l5", "l4", "l2", "l1"}},
		"backend failed over from":  {ledger.RequestQuery{Backend: "sec"}, []string{"l5", "l2"}},
		"backend of an unanswered":  {ledger.RequestQuery{Backend: "m03"}, []string{"l3"}},
		"backend past the bound":    {ledger.RequestQuery{Backend: "m17"}, nil},
		"backend and key":           {ledger.RequestQuery{Backend: "weu", Key: "A"}, []string{"l4", "l1"}},
		"backend and range":         {ledger.RequestQuery{Backend: "weu", From: at(2), To: at(5)}, []string{"l4", "l2"}},
		"backend and cursor":        {ledger.RequestQuery{Backend: "weu", Before: ledger.Cursor{At: at(4), RequestID: "l4"}}, []string{"l2", "l1"}},
		"failover yes":              {ledger.RequestQuery{Failover: "yes"}, []string{"l2"}},
		"failover no":               {ledger.RequestQuery{Failover: "no", Pool: "chat"}, []string{"l5", "l3", "l1"}},
		"cache hit":                 {ledger.RequestQuery{Cache: "hit"}, []string{"l4"}},
		"cache any":                 {ledger.RequestQuery{Cache: "any"}, []string{"l4"}},
		"cache none":                {ledger.RequestQuery{Cache: "none", Key: "A"}, []string{"l3", "l1"}},
		"cache coalesced":           {ledger.RequestQuery{Cache: "coalesced"}, nil},
		"text request id":           {ledger.RequestQuery{Text: "l3"}, []string{"l3"}},
		"text model":                {ledger.RequestQuery{Text: "text-embedding-3"}, []string{"l4"}},
		"text backend tried":        {ledger.RequestQuery{Text: "sec"}, []string{"l5", "l2"}},
		"text backend and backend":  {ledger.RequestQuery{Text: "sec", Backend: "weu"}, []string{"l5", "l2"}},
		"text key and backend":      {ledger.RequestQuery{Text: "A", Backend: "weu"}, []string{"l4", "l1"}},
		"text and cursor":           {ledger.RequestQuery{Text: "T2", Before: ledger.Cursor{At: at(5), RequestID: "l5"}}, []string{"l2"}},
		"text matching two columns": {ledger.RequestQuery{Text: "chat", Pool: "chat", Limit: 2}, []string{"l5", "l3"}},
		"text team":                 {ledger.RequestQuery{Text: "T2"}, []string{"l5", "l2"}},
		"text end user":             {ledger.RequestQuery{Text: "alice"}, []string{"l2"}},
		"text end user hidden":      {ledger.RequestQuery{Text: "alice", TextNoEndUser: true}, nil},
		"text is no substring":      {ledger.RequestQuery{Text: "gpt"}, nil},
		"unanswered by status":      {ledger.RequestQuery{StatusMin: 500, StatusMax: 599}, []string{"l3"}},
	} {
		if tc.q.Limit == 0 {
			tc.q.Limit = 100
		}
		got, err := s.Requests(ctx, tc.q)
		if err != nil || !slices.Equal(ids(got), tc.want) {
			t.Errorf("%s: Requests(%+v) = %v, %v; want %v", name, tc.q, ids(got), err, tc.want)
		}
	}
	for name, q := range map[string]ledger.RequestQuery{
		"failover":      {Limit: 1, Failover: "maybe"},
		"cache":         {Limit: 1, Cache: "miss"},
		"text too long": {Limit: 1, Text: strings.Repeat("q", ledger.MaxText+1)},
	} {
		if _, err := s.Requests(ctx, q); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: Requests = %v, want ErrInvalid", name, err)
		}
	}
	// The unanswered request counts in no spend: whole days (the daily
	// sums) nor a range of minutes (the per-request rows).
	for _, q := range []ledger.SpendQuery{{From: day(3), To: day(4), Key: "A"}, {From: at(0), To: at(10), Key: "A"}} {
		rows, err := s.Spend(ctx, q)
		if err != nil || len(rows) != 1 || rows[0].Requests != 2 {
			t.Errorf("Spend(%v to %v) of key A = %+v, %v; want 2 requests (l1, l4; not the unanswered l3)", q.From, q.To, rows, err)
		}
	}
	// The retention deletes the tried backends with their requests.
	if n, err := s.DeleteRequestsBefore(ctx, at(3), 100); err != nil || n != 2 {
		t.Fatalf("DeleteRequestsBefore = %d, %v; want 2", n, err)
	}
	got, err := s.Requests(ctx, ledger.RequestQuery{Backend: "weu", Limit: 10})
	if err != nil || !slices.Equal(ids(got), []string{"l5", "l4"}) {
		t.Fatalf("backend weu after the retention = %v, %v; want l5, l4", ids(got), err)
	}
	if _, err := s.Request(ctx, "l1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Request(l1) after the retention = %v, want ErrNotFound", err)
	}
}
