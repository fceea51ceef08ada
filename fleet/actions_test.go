package fleet_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchover-gw/switchover/fleet"
)

// partition is one replica's way to the store, which can be cut: every
// call fails and its subscriptions close, as when Redis is down or out
// of the replica's reach.
type partition struct {
	fleet.Store
	down atomic.Bool
	mu   sync.Mutex
	subs []context.CancelFunc
}

func (p *partition) cut() {
	p.down.Store(true)
	p.mu.Lock()
	for _, cancel := range p.subs {
		cancel()
	}
	p.subs = nil
	p.mu.Unlock()
}

func (p *partition) heal() { p.down.Store(false) }

func (p *partition) err(ctx context.Context) error {
	if p.down.Load() {
		return errDown
	}
	return ctx.Err()
}

func (p *partition) Subscribe(ctx context.Context) (<-chan []byte, error) {
	if err := p.err(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p.mu.Lock()
	p.subs = append(p.subs, cancel)
	p.mu.Unlock()
	return p.Store.Subscribe(ctx)
}

func (p *partition) Publish(ctx context.Context, m []byte) error {
	if err := p.err(ctx); err != nil {
		return err
	}
	return p.Store.Publish(ctx, m)
}

func (p *partition) Put(ctx context.Context, k string, v []byte, ttl time.Duration) error {
	if err := p.err(ctx); err != nil {
		return err
	}
	return p.Store.Put(ctx, k, v, ttl)
}

func (p *partition) Delete(ctx context.Context, k string) error {
	if err := p.err(ctx); err != nil {
		return err
	}
	return p.Store.Delete(ctx, k)
}

func (p *partition) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	if err := p.err(ctx); err != nil {
		return nil, err
	}
	return p.Store.List(ctx, prefix)
}

func (p *partition) Acquire(ctx context.Context, k, h string, ttl time.Duration) (bool, error) {
	if err := p.err(ctx); err != nil {
		return false, err
	}
	return p.Store.Acquire(ctx, k, h, ttl)
}

// drainHost is a Host that keeps whether weu is drained, by its own
// actions and those applied from the fleet.
type drainHost struct {
	host
	drained atomic.Bool
}

func (h *drainHost) Apply(a fleet.Action) error {
	h.host.Apply(a)
	h.drained.Store(a.Kind == fleet.ActionDrain)
	return nil
}

// act takes a drain or a restore of weu on replica r of h.
func (h *drainHost) act(r *fleet.Replica, drain bool) {
	a := fleet.Action{Kind: fleet.ActionRestore, Backend: "weu"}
	if drain {
		a.Kind = fleet.ActionDrain
	}
	h.drained.Store(drain)
	r.Act(a)
}

// TestActionTakenWhileTheStoreIsOutReachesTheFleet is the regression test
// for a drain taken on one replica while Redis was down, which stayed on
// that replica for good: it waits there and reaches the fleet when the
// store answers again, in the order the actions were taken, whatever
// replica was away and whatever order they come back in.
func TestActionTakenWhileTheStoreIsOutReachesTheFleet(t *testing.T) {
	type step struct {
		on    string // "a" or "b"
		drain bool
	}
	tests := []struct {
		name   string
		before []step   // taken before the store goes out
		cut    string   // the replicas whose store is out
		steps  []step   // taken a second apart, while they are out
		heal   []string // the order they come back in ("" together)
		want   bool     // weu drained everywhere in the end
	}{
		{"a drains alone", nil, "a", []step{{"a", true}}, []string{"a"}, true},
		{"a drains, b restores since", nil, "a", []step{{"a", true}, {"b", false}}, []string{"a"}, false},
		{"b drains, a restores since", nil, "a", []step{{"b", true}, {"a", false}}, []string{"a"}, false},
		{"a restores, b drains since", nil, "a", []step{{"a", false}, {"b", true}}, []string{"a"}, true},
		{"both out, a back first", nil, "ab", []step{{"a", true}, {"b", false}}, []string{"a", "b"}, false},
		{"both out, b back first", nil, "ab", []step{{"a", true}, {"b", false}}, []string{"b", "a"}, false},
		{"both out, back together", nil, "ab", []step{{"b", false}, {"a", true}}, []string{""}, true},
		{"a misses the restore of a drain it applied", []step{{"b", true}}, "a", []step{{"b", false}}, []string{"a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := fleet.NewMemory()
				stores := map[string]*partition{"a": {Store: mem.View()}, "b": {Store: mem.View()}}
				hosts := map[string]*drainHost{"a": {}, "b": {}}
				reps := map[string]*fleet.Replica{}
				ctx, cancel := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				for _, id := range []string{"a", "b"} {
					r, err := fleet.New(fleet.Options{Store: stores[id], Host: hosts[id], ID: id})
					if err != nil {
						t.Fatal(err)
					}
					reps[id] = r
					wg.Go(func() { r.Run(ctx) })
				}
				synctest.Wait()
				for _, s := range tt.before {
					hosts[s.on].act(reps[s.on], s.drain)
					synctest.Wait()
					time.Sleep(time.Second)
				}
				for _, id := range tt.cut {
					stores[string(id)].cut()
				}
				time.Sleep(5 * fleet.DefaultHeartbeat) // the bubble's clock
				synctest.Wait()
				for _, s := range tt.steps {
					hosts[s.on].act(reps[s.on], s.drain)
					synctest.Wait()
					time.Sleep(time.Second)
				}
				for _, s := range tt.steps {
					if r := reps[s.on]; strings.Contains(tt.cut, s.on) && (r.Up() || r.PendingActions() != 1) {
						t.Errorf("%s, cut off: store up %v, %d actions waiting; want down, 1", s.on, r.Up(), r.PendingActions())
					}
				}
				for _, id := range tt.heal {
					if id == "" {
						for _, p := range stores {
							p.heal()
						}
					} else {
						stores[id].heal()
					}
					time.Sleep(5 * fleet.DefaultHeartbeat)
					synctest.Wait()
				}
				for id, h := range hosts {
					if got := h.drained.Load(); got != tt.want {
						t.Errorf("%s: weu drained %v, want %v (applied from the fleet: %+v)", id, got, tt.want, h.applied)
					}
					if n := reps[id].PendingActions(); n != 0 {
						t.Errorf("%s: %d actions still waiting after the store came back", id, n)
					}
				}
				cancel()
				wg.Wait()
			})
		})
	}
}
