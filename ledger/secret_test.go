package ledger_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		secret, prefix, hash := ledger.NewSecret()
		r, ok := strings.CutPrefix(secret, ledger.SecretPrefix)
		if !ok || len(r) != 32 {
			t.Fatalf("secret %q…: want sk-so- and 32 characters", secret[:10])
		}
		for _, c := range r {
			if !strings.ContainsRune("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", c) {
				t.Fatalf("secret has %q, not base62", c)
			}
		}
		if prefix != r[:ledger.PrefixLen] {
			t.Fatalf("prefix %q is not the first %d random characters", prefix, ledger.PrefixLen)
		}
		if want := sha256.Sum256([]byte(secret)); !bytes.Equal(hash, want[:]) {
			t.Fatal("hash is not SHA-256 of the secret")
		}
		if seen[secret] {
			t.Fatal("NewSecret repeated a secret")
		}
		seen[secret] = true
	}
}

// lookupFunc is a KeyLookup from a function.
type lookupFunc func(prefix string) (ledger.Key, error)

func (f lookupFunc) KeyByPrefix(_ context.Context, p string) (ledger.Key, error) { return f(p) }

func TestVerifyPassesStoreErrorsThrough(t *testing.T) {
	down := errors.New("database is down")
	secret, _, _ := ledger.NewSecret()
	_, err := ledger.Verify(context.Background(), lookupFunc(func(string) (ledger.Key, error) { return ledger.Key{}, down }), secret, time.Now())
	if !errors.Is(err, down) || errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Verify with the store down = %v; want the store's error, not ErrNotFound", err)
	}
}

func TestVerifyDoesNotLookUpMalformedSecrets(t *testing.T) {
	looked := false
	l := lookupFunc(func(string) (ledger.Key, error) { looked = true; return ledger.Key{}, ledger.ErrNotFound })
	for _, s := range []string{"", "sk-so-", "sk-so-" + strings.Repeat("a", 31), "sk-so-" + strings.Repeat("-", 32), "Bearer x"} {
		if _, err := ledger.Verify(context.Background(), l, s, time.Now()); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Verify(%q) = %v, want ErrNotFound", s, err)
		}
	}
	if looked {
		t.Fatal("Verify looked up a malformed secret")
	}
}

func TestPeriodStart(t *testing.T) {
	now := time.Date(2026, 11, 4, 15, 4, 5, 6, time.FixedZone("X", -5*3600)) // Wed 20:04 UTC
	for _, tc := range []struct {
		period string
		want   time.Time
	}{
		{"day", time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)},
		{"week", time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)},
		{"month", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{"1h", time.Date(2026, 11, 4, 20, 0, 0, 0, time.UTC)},
		{"12h", time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC)},
		{"36h", time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)},
		{"30d", time.Date(2026, 10, 8, 0, 0, 0, 0, time.UTC)},
		{"14d", time.Date(2026, 10, 26, 0, 0, 0, 0, time.UTC)}, // a Monday, as every whole number of weeks
	} {
		got, err := ledger.PeriodStart(tc.period, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("PeriodStart(%s) = %v, %v; want %v", tc.period, got, err, tc.want)
		}
		end := ledger.PeriodEnd(tc.period, got)
		if next, _ := ledger.PeriodStart(tc.period, end); !next.Equal(end) || !end.After(now) {
			t.Errorf("PeriodEnd(%s) = %v: not the next period's start after now", tc.period, end)
		}
	}
	if end := ledger.PeriodEnd("30d", time.Date(2026, 10, 8, 0, 0, 0, 0, time.UTC)); !end.Equal(time.Date(2026, 11, 7, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("PeriodEnd(30d) = %v", end)
	}
	before := time.Date(1969, 12, 31, 23, 30, 0, 0, time.UTC) // before the anchor: still rounds down
	if got, _ := ledger.PeriodStart("1h", before); !got.Equal(time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("PeriodStart(1h, 1969) = %v", got)
	}
	sunday := time.Date(2026, 11, 8, 23, 0, 0, 0, time.UTC)
	if got, _ := ledger.PeriodStart("week", sunday); !got.Equal(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("PeriodStart(week, Sunday) = %v, want the Monday before", got)
	}
	for _, p := range []string{"year", "24h", "7d", "0h", "90m"} { // not canonical, or not a period
		if _, err := ledger.PeriodStart(p, now); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("PeriodStart(%s) = %v, want ErrInvalid", p, err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	secret, prefix, hash := ledger.NewSecret()
	k := ledger.Key{ID: "key_x", Prefix: prefix, Hash: hash}
	l := lookupFunc(func(string) (ledger.Key, error) { return k, nil })
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ledger.Verify(context.Background(), l, secret, now); err != nil {
			b.Fatal(err)
		}
	}
}
