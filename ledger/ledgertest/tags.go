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

// testKeyTags: a key's tags and metadata are kept, changed by UpdateKey,
// and refused (ErrInvalid) out of bounds, on creation and on update.
func testKeyTags(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	k, _, err := ledger.NewKey(ctx, s, ledger.Key{Name: "app", Tags: []string{"prod", "team-a"},
		Metadata: map[string]string{"owner": "Ana Pérez", "ticket": "OPS-1'; DROP TABLE api_keys; --"}}, t0)
	if err != nil {
		t.Fatalf("NewKey with tags: %v", err)
	}
	ks, err := s.Keys(ctx)
	if err != nil || len(ks) != 1 {
		t.Fatalf("Keys = %v, %v", ks, err)
	}
	if !slices.Equal(ks[0].Tags, k.Tags) || !reflect.DeepEqual(ks[0].Metadata, k.Metadata) {
		t.Fatalf("stored tags %q and metadata %q, want %q and %q", ks[0].Tags, ks[0].Metadata, k.Tags, k.Metadata)
	}
	k.Tags, k.Metadata = []string{"staging"}, nil
	if err := s.UpdateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if ks, _ = s.Keys(ctx); !slices.Equal(ks[0].Tags, []string{"staging"}) || ks[0].Metadata != nil {
		t.Fatalf("after UpdateKey: tags %q, metadata %q; want [staging] and none", ks[0].Tags, ks[0].Metadata)
	}
	for name, bad := range map[string]ledger.Key{
		"tag with a space":  {Tags: []string{"my tag"}},
		"tag too long":      {Tags: []string{strings.Repeat("t", 65)}},
		"metadata name":     {Metadata: map[string]string{"a b": "c"}},
		"metadata newline":  {Metadata: map[string]string{"owner": "a\nb"}},
		"metadata too long": {Metadata: map[string]string{"owner": strings.Repeat("v", 513)}},
	} {
		bad.ID, bad.Name = k.ID, "app"
		if err := s.UpdateKey(ctx, bad); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("UpdateKey with %s = %v, want ErrInvalid", name, err)
		}
		bad.ID, bad.Prefix, bad.Hash, bad.Created = "key_bad", "badprefix", []byte("h"), t0
		if err := s.CreateKey(ctx, bad); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("CreateKey with %s = %v, want ErrInvalid", name, err)
		}
	}
}

// testSpendByTag: spend grouped and filtered by the tags the records
// carry, the same from the daily sums and from the requests; a request
// without tags counts under "", one with two under both.
func testSpendByTag(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	recs := []ledger.Usage{
		{At: day(2).Add(10 * time.Hour), RequestID: "r1", KeyID: "A", Model: "m", Tags: []string{"prod", "team-a"}, PromptTokens: 100, Cost: 0.001},
		// A's tags changed between its requests: each keeps its own.
		{At: day(2).Add(11 * time.Hour), RequestID: "r2", KeyID: "A", Model: "m", Tags: []string{"prod"}, PromptTokens: 200, Cost: 0.002},
		{At: day(3).Add(9 * time.Hour), RequestID: "r3", KeyID: "B", Model: "m", PromptTokens: 1000, Cost: 0.01},
		{At: day(3).Add(10 * time.Hour), RequestID: "r4", KeyID: "C", Model: "m", Tags: []string{"team-a", "prod", "prod"}, PromptTokens: 10, Cost: 0.0001},
	}
	again := recs[0]
	again.Tags = []string{"other"}
	for _, b := range [][]ledger.Usage{recs[:2], recs[2:], {again}} {
		if err := s.RecordUsage(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		by   []string
		tag  string
		want []ledger.SpendRow
	}{
		{"total, tags aside", nil, "", []ledger.SpendRow{{Requests: 4, PromptTokens: 1310, Cost: 0.0131}}},
		{"by tag", []string{ledger.ByTag}, "", []ledger.SpendRow{
			{Requests: 1, PromptTokens: 1000, Cost: 0.01},
			{Tag: "prod", Requests: 3, PromptTokens: 310, Cost: 0.0031},
			{Tag: "team-a", Requests: 2, PromptTokens: 110, Cost: 0.0011}}},
		{"one tag", nil, "prod", []ledger.SpendRow{{Requests: 3, PromptTokens: 310, Cost: 0.0031}}},
		{"one tag by key", []string{ledger.ByKey}, "prod", []ledger.SpendRow{
			{Key: "A", Requests: 2, PromptTokens: 300, Cost: 0.003},
			{Key: "C", Requests: 1, PromptTokens: 10, Cost: 0.0001}}},
		{"one tag by tag and key", []string{ledger.ByTag, ledger.ByKey}, "team-a", []ledger.SpendRow{
			{Tag: "team-a", Key: "A", Requests: 1, PromptTokens: 100, Cost: 0.001},
			{Tag: "team-a", Key: "C", Requests: 1, PromptTokens: 10, Cost: 0.0001}}},
		{"a tag nobody has", nil, "nope", []ledger.SpendRow{{}}},
		{"a tag the repeated record named", nil, "other", []ledger.SpendRow{{}}},
	}
	ranges := map[string][2]time.Time{"daily": {day(1), day(10)}, "requests": {day(1).Add(time.Hour), day(10).Add(time.Hour)}}
	for _, tc := range tests {
		for path, r := range ranges {
			t.Run(tc.name+", "+path, func(t *testing.T) {
				q := ledger.SpendQuery{From: r[0], To: r[1], By: tc.by, Tag: tc.tag}
				got, err := s.Spend(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("Spend(%+v) =\n%s\nwant\n%s", q, rows(got), rows(tc.want))
				}
			})
		}
	}
}
