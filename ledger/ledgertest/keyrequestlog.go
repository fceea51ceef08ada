package ledgertest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

// testKeyRequestLog: a key's own request log settings are kept on
// creation, changed and removed by UpdateKey, left alone by other
// changes, and refused (ErrInvalid) out of bounds, changing nothing.
func testKeyRequestLog(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	on, off := true, false
	k, secret, err := ledger.NewKey(ctx, s, ledger.Key{Name: "app", RequestLog: &ledger.KeyRequestLog{Bodies: &on, MaxBodyBytes: 4096}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	stored := func(step string, want *ledger.KeyRequestLog) {
		t.Helper()
		got, err := ledger.Verify(ctx, s, secret, t0)
		if err != nil || !reflect.DeepEqual(got.RequestLog, want) {
			t.Fatalf("%s: Verify has the request log %+v (%v), want %+v", step, got.RequestLog, err, want)
		}
		ks, err := s.Keys(ctx)
		if err != nil || len(ks) != 1 || !reflect.DeepEqual(ks[0].RequestLog, want) {
			t.Fatalf("%s: Keys has %+v (%v), want the request log %+v", step, ks, err, want)
		}
	}
	stored("created", &ledger.KeyRequestLog{Bodies: &on, MaxBodyBytes: 4096})
	k.RPM = 7
	if err := s.UpdateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	stored("another change", &ledger.KeyRequestLog{Bodies: &on, MaxBodyBytes: 4096})
	k.RequestLog = &ledger.KeyRequestLog{Bodies: &off}
	if err := s.UpdateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	stored("off", &ledger.KeyRequestLog{Bodies: &off})
	k.RequestLog = &ledger.KeyRequestLog{MaxBodyBytes: ledger.MaxKeyBodyBytes}
	if err := s.UpdateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	stored("only a bound", &ledger.KeyRequestLog{MaxBodyBytes: ledger.MaxKeyBodyBytes})
	k.RequestLog = nil
	if err := s.UpdateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	stored("removed", nil)
	for _, bad := range []int64{-1, ledger.MaxKeyBodyBytes + 1} {
		k.RequestLog = &ledger.KeyRequestLog{Bodies: &on, MaxBodyBytes: bad}
		if err := s.UpdateKey(ctx, k); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("UpdateKey with max_body_bytes %d: %v, want ErrInvalid", bad, err)
		}
		if _, _, err := ledger.NewKey(ctx, s, ledger.Key{Name: "bad", RequestLog: k.RequestLog}, t0); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("NewKey with max_body_bytes %d: %v, want ErrInvalid", bad, err)
		}
	}
	stored("after the refusals", nil)
}
