package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
)

// TestUsageRecordsKeyTags: the usage of a config key's and a store key's
// requests carries the key's tags, so spend by tag counts both; a change
// of the store key's tags applies to its later requests only.
func TestUsageRecordsKeyTags(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			cfgKey := "cfg-key-0123456789abcdef0123456789"
			e := startProviders(t, []string{"openai"}, nil, st.yaml(t)+
				"keys:\n  - {name: cfg-app, key: "+cfgKey+", tags: [prod, config], metadata: {owner: ana}}\n")
			store := e.gw.Ledger()
			k, secret, err := ledger.NewKey(t.Context(), store, ledger.Key{Name: "app", Tags: []string{"prod"}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			e.gw.KeysChanged()
			for _, key := range []string{cfgKey, secret} {
				if code, _, b := post(t, e.url, key, chatBody); code != http.StatusOK {
					t.Fatalf("%d %s", code, b)
				}
			}
			spend(t, store, k.ID, 1)
			spend(t, store, "cfg-app", 1)
			k.Tags = []string{"staging"}
			if err := store.UpdateKey(t.Context(), k); err != nil {
				t.Fatal(err)
			}
			e.gw.KeysChanged()
			if code, _, b := post(t, e.url, secret, chatBody); code != http.StatusOK {
				t.Fatalf("%d %s", code, b)
			}
			spend(t, store, k.ID, 2)
			want := map[string]int64{"config": 1, "prod": 2, "staging": 1}
			got := map[string]int64{}
			poll.Until(t, 30*time.Second, func() bool {
				rows, err := store.Spend(context.Background(), ledger.SpendQuery{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), By: []string{ledger.ByTag}})
				if err != nil {
					return false
				}
				got = map[string]int64{}
				for _, r := range rows {
					got[r.Tag] = r.Requests
				}
				return reflect.DeepEqual(got, want)
			}, func() string { return fmt.Sprintf("requests by tag %v, want %v", got, want) })
		})
	}
}
