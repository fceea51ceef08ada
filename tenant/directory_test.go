package tenant

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/ledger"
)

func TestDirectoryConfigKeys(t *testing.T) {
	d := NewDirectory(fakeclock.New(), nil)
	if d.Required() {
		t.Fatal("a directory without keys requires one")
	}
	d.SetConfig([]ConfigKey{{Secret: "app-secret-0123456789", Principal: Principal{ID: "app", Name: "app", Team: "t"}}},
		[]Team{{Name: "t", Limits: Limits{RPM: 5}}})
	if !d.Required() {
		t.Fatal("keys are configured and none is required")
	}
	p, err := d.Authenticate(context.Background(), "app-secret-0123456789")
	if err != nil || p.ID != "app" || p.Source != "config" {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	if _, err := d.Authenticate(context.Background(), "app-secret-012345678X"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("wrong secret: %v", err)
	}
	if l, ok := d.Team("t"); !ok || l.RPM != 5 {
		t.Fatalf("team t: %+v %v", l, ok)
	}
}

func TestDirectoryStoreKeys(t *testing.T) {
	ctx := context.Background()
	c := fakeclock.New()
	store := openLedger(t)
	d := NewDirectory(c, store)
	if !d.Required() {
		t.Fatal("a directory over a store must require keys")
	}
	k, secret, err := ledger.NewKey(ctx, store, ledger.Key{Name: "ci", Team: "apps", RPM: 7, Patience: time.Minute, Expires: c.Now().Add(time.Hour)}, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Not refreshed yet: found in the store on the miss.
	p, err := d.Authenticate(ctx, secret)
	if err != nil || p.ID != k.ID || p.Limits.RPM != 7 || p.Patience != time.Minute || p.Source != "store" {
		t.Fatalf("a key made before the refresh: %+v, %v", p, err)
	}
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	p2, err := d.Authenticate(ctx, secret)
	if err != nil || p2.ID != k.ID {
		t.Fatalf("after the refresh: %+v, %v", p2, err)
	}
	// Known keys are checked from memory: they keep working while the
	// store is down, and a revocation shows with the next refresh.
	if err := store.RevokeKey(ctx, k.ID, c.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Authenticate(ctx, secret); err != nil {
		t.Fatalf("before the refresh that reads the revocation: %v", err)
	}
	d.Refresh(ctx)
	if _, err := d.Authenticate(ctx, secret); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked key: %v", err)
	}

	k2, secret2, _ := ledger.NewKey(ctx, store, ledger.Key{Name: "short", Expires: c.Now().Add(time.Minute)}, c.Now())
	d.Refresh(ctx)
	c.Advance(time.Minute)
	if _, err := d.Authenticate(ctx, secret2); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired key %s: %v", k2.ID, err)
	}
}

// countingStore counts the store's lookups by prefix.
type countingStore struct {
	ledger.Store
	lookups int
}

func (s *countingStore) KeyByPrefix(ctx context.Context, p string) (ledger.Key, error) {
	s.lookups++
	return s.Store.KeyByPrefix(ctx, p)
}

func TestDirectoryRemembersMisses(t *testing.T) {
	ctx := context.Background()
	c := fakeclock.New()
	store := &countingStore{Store: openLedger(t)}
	d := NewDirectory(c, store)
	d.Refresh(ctx)
	secret, _, _ := ledger.NewSecret()
	for range 5 {
		if _, err := d.Authenticate(ctx, secret); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("unknown secret: %v", err)
		}
	}
	if store.lookups != 1 {
		t.Fatalf("%d store lookups for 5 tries of one unknown secret; want 1", store.lookups)
	}
	c.Advance(missFor)
	d.Authenticate(ctx, secret)
	if store.lookups != 2 {
		t.Fatalf("after the miss expired: %d lookups, want 2", store.lookups)
	}
	if _, err := d.Authenticate(ctx, "not-our-form"); !errors.Is(err, ErrUnknownKey) || store.lookups != 2 {
		t.Fatalf("a secret not of the store's form: %v, %d lookups", err, store.lookups)
	}
	store.Close()
	other, _, _ := ledger.NewSecret()
	if _, err := d.Authenticate(ctx, other); err == nil || errors.Is(err, ErrUnknownKey) {
		t.Fatalf("store down: %v, want the store's error", err)
	}
}

// memKeys is a KeyStore in memory, for benchmarks with many keys.
type memKeys struct{ keys []ledger.Key }

func (m *memKeys) Keys(context.Context) ([]ledger.Key, error)   { return m.keys, nil }
func (m *memKeys) Teams(context.Context) ([]ledger.Team, error) { return nil, nil }
func (m *memKeys) KeyByPrefix(_ context.Context, p string) (ledger.Key, error) {
	for _, k := range m.keys {
		if k.Prefix == p {
			return k, nil
		}
	}
	return ledger.Key{}, ledger.ErrNotFound
}

// BenchmarkAuthenticate checks a store key's secret among 10 and among
// 10,000 keys: the cost does not grow with the number of keys.
func BenchmarkAuthenticate(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			m := &memKeys{}
			var secret string
			for i := range n {
				s, prefix, hash := ledger.NewSecret()
				m.keys = append(m.keys, ledger.Key{ID: fmt.Sprintf("key_%d", i), Prefix: prefix, Hash: hash})
				secret = s
			}
			d := NewDirectory(fakeclock.New(), m)
			if err := d.Refresh(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Authenticate(context.Background(), secret); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStoreKeysShareObjectsWithTheirConfiguredTeam: a store key of a
// team whose configuration shares objects is marked so, before and after
// a refresh, and stops being when the configuration stops sharing.
func TestStoreKeysShareObjectsWithTheirConfiguredTeam(t *testing.T) {
	ctx := context.Background()
	c := fakeclock.New()
	store := openLedger(t)
	d := NewDirectory(c, store)
	d.SetConfig(nil, []Team{{Name: "apps", ShareObjects: true}})
	_, secret, err := ledger.NewKey(ctx, store, ledger.Key{Name: "ci", Team: "apps"}, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p, err := d.Authenticate(ctx, secret); err != nil || !p.ShareObjects {
		t.Fatalf("found in the store: %+v, %v", p, err)
	}
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if p, err := d.Authenticate(ctx, secret); err != nil || !p.ShareObjects {
		t.Fatalf("after the refresh: %+v, %v", p, err)
	}
	d.SetConfig(nil, []Team{{Name: "apps"}})
	if p, err := d.Authenticate(ctx, secret); err != nil || p.ShareObjects {
		t.Fatalf("after the team stopped sharing: %+v, %v", p, err)
	}
}

// slowKeysStore holds its first Keys call, having read the store, until
// release is closed.
type slowKeysStore struct {
	ledger.Store
	held    chan struct{} // closed once the first call has read
	release chan struct{}
	calls   int
}

func (s *slowKeysStore) Keys(ctx context.Context) ([]ledger.Key, error) {
	s.calls++
	keys, err := s.Store.Keys(ctx)
	if s.calls == 1 {
		close(s.held)
		<-s.release
	}
	return keys, err
}

// TestRefreshOvertakenKeepsTheLaterRead is the regression test for the
// flaky TestKeyExpiryAndRotationGraceLapse: a background Refresh that
// read the keys before an admin rotation published after the admin
// API's own Refresh, so the rotated secret was the key's current one
// again and answered 200 after its grace. A read begun earlier never
// replaces one published later.
func TestRefreshOvertakenKeepsTheLaterRead(t *testing.T) {
	ctx := context.Background()
	c := fakeclock.New()
	store := &slowKeysStore{Store: openLedger(t), held: make(chan struct{}), release: make(chan struct{})}
	k, oldSecret, err := ledger.NewKey(ctx, store, ledger.Key{Name: "rotated"}, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	d := NewDirectory(c, store)
	background := make(chan error, 1)
	go func() { background <- d.Refresh(ctx) }()
	<-store.held // the background refresh has read the key before its rotation

	newSecret, err := ledger.Rotate(ctx, store, k.ID, c.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Refresh(ctx); err != nil { // the admin API's, after the rotation
		t.Fatal(err)
	}
	close(store.release)
	if err := <-background; err != nil {
		t.Fatal(err)
	}

	c.Advance(time.Minute)
	if _, err := d.Authenticate(ctx, oldSecret); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("the rotated secret after its grace: %v, want %v", err, ErrUnknownKey)
	}
	if p, err := d.Authenticate(ctx, newSecret); err != nil || p.ID != k.ID {
		t.Fatalf("the new secret: %+v, %v", p, err)
	}
}
