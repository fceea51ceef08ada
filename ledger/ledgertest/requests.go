package ledgertest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// requestRecords: six records over two days; r3 and r4 at the same time.
func requestRecords() []ledger.Usage {
	at := func(h, m int) time.Time { return day(2).Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	return []ledger.Usage{
		{At: at(9, 0), RequestID: "r1", KeyID: "A", Team: "T1", Pool: "p", Backend: "b1", Region: "eu", Model: "m1",
			Tags: []string{"prod"}, EndUser: "alice@example.com", PromptTokens: 10, CompletionTokens: 5, Cost: 0.001, Status: 200},
		{At: at(10, 0), RequestID: "r2", KeyID: "B", Team: "T2", Pool: "p", Backend: "b2", Model: "m2",
			EndUser: "=bob", PromptTokens: 20, Cost: 0.002, Status: 429},
		{At: at(11, 0), RequestID: "r3", KeyID: "A", Team: "T1", Pool: "p", Backend: "b2", Model: "m1",
			Tags: []string{"prod", "team-a"}, PromptTokens: 30, Cost: 0.003, Status: 200, Failover: true},
		{At: at(11, 0), RequestID: "r4", KeyID: "C", Team: "T1", Pool: "p", Backend: "b1", Model: "m1",
			PromptTokens: 40, Cost: 0.004, Status: 502},
		{At: at(12, 0), RequestID: "r5", KeyID: "A", Team: "T1", Pool: "p", Backend: "b1", Model: "m2",
			Tags: []string{"team-a"}, EndUser: "alice@example.com", PromptTokens: 50, Cost: 0.005, Status: 200, Estimated: true},
		{At: at(24+8, 0), RequestID: "r6", KeyID: "B", Team: "T2", Pool: "p", Backend: "b1", Model: "m1",
			PromptTokens: 60, Cost: 0.006, Status: 0},
	}
}

func ids(us []ledger.Usage) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.RequestID)
	}
	return out
}

// testRequests: the request logs page newest first by (time, id) without
// gaps or repeats, also when newer records arrive between pages; every
// filter; the records read back as recorded.
func testRequests(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	recs := requestRecords()
	if err := s.RecordUsage(ctx, recs); err != nil {
		t.Fatal(err)
	}
	all, err := s.Requests(ctx, ledger.RequestQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(all), []string{"r6", "r5", "r4", "r3", "r2", "r1"}; !slices.Equal(got, want) {
		t.Fatalf("Requests = %v, want %v", got, want)
	}
	for _, u := range all {
		i := slices.IndexFunc(recs, func(r ledger.Usage) bool { return r.RequestID == u.RequestID })
		want := recs[i]
		want.At = want.At.UTC()
		if !reflect.DeepEqual(u, want) {
			t.Errorf("read back\n%+v\nrecorded\n%+v", u, want)
		}
	}

	// Pages of two, with a newer record and an older one (a spool
	// replay) arriving after the first page.
	var paged []string
	q := ledger.RequestQuery{Limit: 2}
	for page := 0; ; page++ {
		got, err := s.Requests(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, ids(got)...)
		if page == 0 {
			late := []ledger.Usage{{At: day(5), RequestID: "r7", KeyID: "A"}, {At: day(1), RequestID: "r0", KeyID: "A"}}
			if err := s.RecordUsage(ctx, late); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) < q.Limit {
			break
		}
		q.Before = ledger.CursorOf(got[len(got)-1])
	}
	if want := []string{"r6", "r5", "r4", "r3", "r2", "r1", "r0"}; !slices.Equal(paged, want) {
		t.Fatalf("paged %v, want %v (r7 is newer than the first page: not in the later ones)", paged, want)
	}

	in := func(h int) time.Time { return day(2).Add(time.Duration(h) * time.Hour) }
	for name, tc := range map[string]struct {
		q    ledger.RequestQuery
		want []string
	}{
		"key":              {ledger.RequestQuery{Key: "A"}, []string{"r7", "r5", "r3", "r1", "r0"}},
		"team":             {ledger.RequestQuery{Team: "T2"}, []string{"r6", "r2"}},
		"tag":              {ledger.RequestQuery{Tag: "prod"}, []string{"r3", "r1"}},
		"tag and key":      {ledger.RequestQuery{Tag: "team-a", Key: "A"}, []string{"r5", "r3"}},
		"model":            {ledger.RequestQuery{Model: "m2"}, []string{"r5", "r2"}},
		"end user":         {ledger.RequestQuery{EndUser: "alice@example.com"}, []string{"r5", "r1"}},
		"end user and key": {ledger.RequestQuery{EndUser: "=bob", Key: "B"}, []string{"r2"}},
		"status 2xx":       {ledger.RequestQuery{StatusMin: 200, StatusMax: 299}, []string{"r5", "r3", "r1"}},
		"status errors":    {ledger.RequestQuery{StatusMin: 400}, []string{"r4", "r2"}},
		"time range":       {ledger.RequestQuery{From: in(10), To: in(12)}, []string{"r4", "r3", "r2"}},
		"range and cursor": {ledger.RequestQuery{From: in(10), To: in(12), Before: ledger.Cursor{At: in(11), RequestID: "r4"}}, []string{"r3", "r2"}},
		"nothing":          {ledger.RequestQuery{Key: "nobody"}, nil},
	} {
		tc.q.Limit = 100
		got, err := s.Requests(ctx, tc.q)
		if err != nil || !slices.Equal(ids(got), tc.want) {
			t.Errorf("%s: Requests(%+v) = %v, %v; want %v", name, tc.q, ids(got), err, tc.want)
		}
	}
	for name, q := range map[string]ledger.RequestQuery{
		"limit 0":           {},
		"limit over":        {Limit: ledger.MaxRequestsLimit + 1},
		"empty range":       {Limit: 1, From: in(12), To: in(12)},
		"cursor without id": {Limit: 1, Before: ledger.Cursor{At: in(1)}},
		"end user too long": {Limit: 1, EndUser: strings.Repeat("u", ledger.MaxEndUser+1)},
	} {
		if _, err := s.Requests(ctx, q); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: Requests = %v, want ErrInvalid", name, err)
		}
	}
}
