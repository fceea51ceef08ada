package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgertest"
	"github.com/switchover-gw/switchover/ledger/postgres"
)

func TestPostgres(t *testing.T) {
	srv := pgtest.StartServer(t)
	ledgertest.Run(t, ledgertest.Harness{
		Open: func(t *testing.T) ledger.Store {
			s, err := postgres.Open(context.Background(), srv.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		// The database goes down and comes back with its data.
		Break: func(t *testing.T, s ledger.Store) (restore func()) {
			srv.Stop()
			return srv.Restart
		},
	})
}

// TestPostgresDownVerifyReportsStoreError: with the database down, Verify
// returns the store's error, not one of the key errors, and lets nothing
// through; once it is back, the same secret verifies again.
func TestPostgresDownVerifyReportsStoreError(t *testing.T) {
	srv := pgtest.StartServer(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, srv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	k, secret, err := ledger.NewKey(ctx, s, ledger.Key{Name: "a"}, now)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_, err = ledger.Verify(ctx, s, secret, now)
	if err == nil || errors.Is(err, ledger.ErrNotFound) || errors.Is(err, ledger.ErrRevoked) || errors.Is(err, ledger.ErrExpired) {
		t.Fatalf("Verify with the database down = %v; want the store's error", err)
	}
	srv.Restart()
	if got, err := ledger.Verify(ctx, s, secret, now); err != nil || got.ID != k.ID {
		t.Fatalf("Verify after the database came back = %v, %v; want %s", got.ID, err, k.ID)
	}
}
