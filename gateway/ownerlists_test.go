package gateway_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/pgtest"
)

// Issue 23, High 1: lists of objects without metadata (files here) show
// each key its own, from the gateway's owner index: the store's table
// with a store, else the replica's memory.

// ownerIndexes are the owner indexes a gateway may run with: the
// configuration's store block for each ("" for none: memory).
var ownerIndexes = []struct {
	name  string
	store func(t *testing.T) string
}{
	{"memory", func(*testing.T) string { return "" }},
	{"sqlite", func(t *testing.T) string {
		return fmt.Sprintf("store: {sqlite: %q}\n", filepath.Join(t.TempDir(), "switchover.db"))
	}},
	{"postgres", func(t *testing.T) string { return fmt.Sprintf("store: {postgres: %q}\n", pgtest.Shared(t)) }},
}

// TestFileListsShowEachKeyItsOwn: key A and key B each upload a file and
// each lists only its own; a third key lists none; a file its owner
// deletes leaves its list; another key's delete of it is refused.
func TestFileListsShowEachKeyItsOwn(t *testing.T) {
	for _, ix := range ownerIndexes {
		t.Run(ix.name, func(t *testing.T) {
			store := ix.store(t)
			e := startProvidersWith(t, []string{"aoai-weu", "openai"}, nil, ownerExtra, func(y string) string {
				return strings.Replace(y, "keys:", store+"keys:", 1)
			})
			fileA := idOf(t, upload(t, e, keyA, ownerBatchInput))
			fileA2 := idOf(t, upload(t, e, keyA, ownerBatchInput))
			fileB := idOf(t, upload(t, e, keyB, ownerBatchInput))
			sorted := func(ids ...string) string {
				ids = slices.Clone(ids)
				slices.Sort(ids)
				return strings.Join(ids, ",")
			}
			for _, c := range []struct {
				key  string
				want string
			}{{keyA, sorted(fileA, fileA2)}, {keyB, fileB}, {keyBlue1, ""}} {
				if got := listIDs(t, e, "/v1/files", c.key); sorted(got...) != c.want {
					t.Errorf("files listed by %.6s: %q, want %q", c.key, got, c.want)
				}
			}
			if a := ownCall(t, e, "DELETE", "/v1/files/"+fileA, keyB, ""); a.status != http.StatusNotFound {
				t.Errorf("B deleting A's file: %d %s", a.status, a.body)
			}
			if a := ownCall(t, e, "DELETE", "/v1/files/"+fileA, keyA, ""); a.status != http.StatusOK {
				t.Fatalf("A deleting its file: %d %s", a.status, a.body)
			}
			if got := listIDs(t, e, "/v1/files", keyA); sorted(got...) != fileA2 {
				t.Errorf("A's files after deleting one: %q, want %q", got, fileA2)
			}
			if got := listIDs(t, e, "/v1/files", keyB); sorted(got...) != fileB {
				t.Errorf("B's files after A deleted one: %q, want %q", got, fileB)
			}
		})
	}
}

// TestFileListsAcrossRedisReplicas: with state.redis and no store, the
// owner index is in Redis, so a file made through one replica is listed
// by its owner through another, and a delete through one drops it for
// every replica.
func TestFileListsAcrossRedisReplicas(t *testing.T) {
	top := "keys:\n  - {name: a, key: " + keyA + "}\n  - {name: b, key: " + keyB + "}\n  - {name: c, key: " + keyBlue1 + "}\n" +
		"object_ids: {secret: " + ownerSecret + "}\npinned:\n  - {paths: [files], backend: uksouth}\n"
	f := startFleetEnv(t, 2, "", "", top)
	ra, rb := &providerEnv{url: f.replicas[0].url}, &providerEnv{url: f.replicas[1].url}
	fileA := idOf(t, upload(t, ra, keyA, ownerBatchInput))
	fileB := idOf(t, upload(t, rb, keyB, ownerBatchInput))
	for _, c := range []struct {
		via  *providerEnv
		key  string
		want string
	}{{rb, keyA, fileA}, {ra, keyA, fileA}, {ra, keyB, fileB}, {rb, keyBlue1, ""}} {
		if got := listIDs(t, c.via, "/v1/files", c.key); strings.Join(got, ",") != c.want {
			t.Errorf("files listed by %.6s through %s: %q, want %q", c.key, c.via.url, got, c.want)
		}
	}
	if a := ownCall(t, rb, "DELETE", "/v1/files/"+fileA, keyA, ""); a.status != http.StatusOK {
		t.Fatalf("A deleting its file through b: %d %s", a.status, a.body)
	}
	if got := listIDs(t, ra, "/v1/files", keyA); len(got) != 0 {
		t.Errorf("A's files through a after deleting through b: %q", got)
	}
}
