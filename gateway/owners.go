package gateway

import (
	"context"
	"log/slog"

	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/route"
)

// ownerIndex is the index of who made the stored objects that have no
// metadata (files, uploads, containers, message batches), by which their
// lists show a key its own (route.OwnerIndex): the store's object_owners
// table when there is a store, shared by every replica; else the fleet's
// Redis (state.redis), shared too; else this process's memory, which knows only the objects made through this
// replica since it started (route.MemoryIndex). Without keys lists are
// not filtered and nothing is recorded. Call it after startTenancy.
func (g *Gateway) ownerIndex() route.OwnerIndex {
	if t := g.ten; t != nil && t.store != nil {
		if o, ok := t.store.(ledger.ObjectOwners); ok {
			return storeIndex{o: o, clk: clock.Or(g.opts.Clock), log: g.Logger}
		}
	}
	if f := g.fleet; f != nil {
		if o, ok := f.store.(fleetOwners); ok {
			return fleetIndex{o: o, log: g.Logger}
		}
	}
	return route.NewMemoryIndex(0)
}

// fleetOwners is the owner index a fleet's store may keep
// (redisstore.Store: one key per object, for redisstore.OwnerTTL).
type fleetOwners interface {
	RecordOwner(ctx context.Context, backend, id, mark string) error
	OwnerMarks(ctx context.Context, backend string, ids []string) (map[string]string, error)
	ForgetOwner(ctx context.Context, backend, id string) error
}

// fleetIndex is a route.OwnerIndex over a fleet's store; it logs its
// failures.
type fleetIndex struct {
	o   fleetOwners
	log *slog.Logger
}

var _ route.OwnerIndex = fleetIndex{}

func (f fleetIndex) Record(ctx context.Context, backend, id, mark string) error {
	return logIndexFailure(f.log, "record", f.o.RecordOwner(ctx, backend, id, mark))
}

func (f fleetIndex) Marks(ctx context.Context, backend string, ids []string) (map[string]string, error) {
	m, err := f.o.OwnerMarks(ctx, backend, ids)
	return m, logIndexFailure(f.log, "lookup", err)
}

func (f fleetIndex) Forget(ctx context.Context, backend, id string) error {
	return logIndexFailure(f.log, "delete", f.o.ForgetOwner(ctx, backend, id))
}

// storeIndex is a route.OwnerIndex over the store's object_owners table;
// it logs its failures (an object then missing from its owner's list).
type storeIndex struct {
	o   ledger.ObjectOwners
	clk clock.Clock
	log *slog.Logger
}

func (s storeIndex) failed(what string, err error) error { return logIndexFailure(s.log, what, err) }

// logIndexFailure logs err, a failure of the owner index, and returns it.
func logIndexFailure(log *slog.Logger, what string, err error) error {
	if err != nil {
		log.Warn("object owners: "+what+" failed; lists leave out the objects concerned", "error", err)
	}
	return err
}

var _ route.OwnerIndex = storeIndex{}

func (s storeIndex) Record(ctx context.Context, backend, id, mark string) error {
	return s.failed("record", s.o.RecordOwner(ctx, backend, id, mark, s.clk.Now()))
}

func (s storeIndex) Marks(ctx context.Context, backend string, ids []string) (map[string]string, error) {
	m, err := s.o.OwnerMarks(ctx, backend, ids)
	return m, s.failed("lookup", err)
}

func (s storeIndex) Forget(ctx context.Context, backend, id string) error {
	return s.failed("delete", s.o.ForgetOwner(ctx, backend, id))
}
