package redisstore_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/internal/redistest"
)

// TestOwnersSharedByReplicas: an owner recorded through one replica's
// store is read through another's, expires after OwnerTTL, and a forget
// through either drops it for both.
func TestOwnersSharedByReplicas(t *testing.T) {
	url := redistest.Start(t)
	opts := redisstore.Options{URL: url, Prefix: "owners1:"}
	a, b := newStore(t, opts), newStore(t, opts)
	ctx := t.Context()
	for _, r := range []struct{ backend, id, mark string }{{"weu", "file-a", "ma"}, {"weu", "file-b", "mb"}, {"eus", "file-a", "mc"}} {
		if err := a.RecordOwner(ctx, r.backend, r.id, r.mark); err != nil {
			t.Fatal(err)
		}
	}
	ids := []string{"file-a", "file-b", "file-none"}
	for i := range 300 { // past one pipeline's batch
		ids = append(ids, "file-x"+string(rune('a'+i%26))+time.Duration(i).String())
	}
	got, err := b.OwnerMarks(ctx, "weu", ids)
	if want := map[string]string{"file-a": "ma", "file-b": "mb"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("OwnerMarks through b = %v, %v; want %v", got, err, want)
	}
	opt, _ := redis.ParseURL(url)
	raw := redis.NewClient(opt)
	defer raw.Close()
	if ttl, err := raw.TTL(ctx, "owners1:owner:weu:file-a").Result(); err != nil || ttl <= 0 || ttl > redisstore.OwnerTTL {
		t.Errorf("an owner's TTL = %v, %v; want up to %v", ttl, err, redisstore.OwnerTTL)
	}
	if err := b.ForgetOwner(ctx, "weu", "file-a"); err != nil {
		t.Fatal(err)
	}
	got, err = a.OwnerMarks(ctx, "weu", []string{"file-a", "file-b"})
	if want := map[string]string{"file-b": "mb"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after a forget, OwnerMarks = %v, %v; want %v", got, err, want)
	}
	if got, _ := a.OwnerMarks(ctx, "eus", []string{"file-a"}); got["file-a"] != "mc" {
		t.Errorf("another backend's owner = %v, want mc", got)
	}
}
