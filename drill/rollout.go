package drill

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// rolloutKey is the key of the rollout, in every replica's keys block.
const rolloutKey = "sk-drill-rollout-0123456789abcdef01234"

// fleet is the rollout's replicas, each offered the key's requests at a
// steady pace by a caller of its own.
type fleet struct {
	d      *drill
	s      setup
	mu     sync.Mutex
	t      tally // what the fleet answered since the last take
	byName map[string]*paced
	order  []string
}

// paced is a replica and the caller that offers it a request every
// Options.Interval.
type paced struct {
	rep    *replica
	cancel context.CancelFunc
	done   chan struct{}
}

// rollout is issue 24's item 4: three replicas share a key's rpm through
// Redis; after each of a rollout, a scale-down, a scale-up and a Redis
// restart, what the fleet admits in the next Window is set against what
// the limit allows.
func (d *drill) rollout(ctx context.Context) error {
	if d.o.Redis == nil {
		d.skip("rollout: no Redis given")
		return nil
	}
	d.seq++
	f := &fleet{d: d, byName: map[string]*paced{}, s: setup{
		redis:  d.o.Redis.URL(),
		prefix: fmt.Sprintf("drill-%d-%d:", time.Now().UnixNano(), d.seq),
		keys:   fmt.Sprintf("keys:\n  - {name: drill-rollout, key: %s, rpm: %d}\n", rolloutKey, d.o.RPM),
	}}
	defer f.stopAll()
	perMinute := float64(d.o.RPM) * d.o.Window.Minutes()
	burst := float64(d.o.RPM) / 6 // the bucket holds ten seconds' worth
	phases := []struct {
		name    string
		allowed float64
		event   func() error
	}{
		{"fresh fleet (limit + one burst)", perMinute + burst, func() error { return f.add(ctx, "gw-a", "gw-b", "gw-c") }},
		{"rollout: gw-c replaced by gw-d", perMinute, func() error { f.remove("gw-c"); return f.add(ctx, "gw-d") }},
		{"scale-down: gw-d stopped", perMinute, func() error { f.remove("gw-d"); return nil }},
		{"scale-up: gw-e joins", perMinute, func() error { return f.add(ctx, "gw-e") }},
		{"Redis restarted (empty)", perMinute, d.o.Redis.Restart},
	}
	for _, p := range phases {
		d.o.progress("rollout: %s, then %v at rpm %d", p.name, d.o.Window, d.o.RPM)
		f.take()
		row := PhaseRow{Phase: p.name, Window: d.o.Window, Allowed: p.allowed}
		if err := p.event(); errors.Is(err, ErrNoRestart) {
			d.skip("rollout, %s: %v", p.name, err)
			continue
		} else if err != nil {
			return err
		}
		row.Replicas = f.names()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.o.Window):
		}
		t := f.take()
		row.Offered, row.Admitted, row.Refused, row.Errors = t.sent(), t.admitted, t.rate, t.failed+t.budget
		row.MaxRetryAfter = t.maxRetryAfter
		d.rep.Rollout = append(d.rep.Rollout, row)
	}
	return nil
}

// add starts the named replicas, each with its caller.
func (f *fleet) add(ctx context.Context, names ...string) error {
	for _, name := range names {
		s := f.s
		s.name = name
		rep, err := f.d.b.startReplica(s)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithCancel(ctx)
		p := &paced{rep: rep, cancel: cancel, done: make(chan struct{})}
		go f.offer(cctx, p)
		f.mu.Lock()
		f.byName[name] = p
		f.order = append(f.order, name)
		f.mu.Unlock()
	}
	return nil
}

// offer sends p's replica a request every Interval until ctx ends, each
// on a goroutine of its own so that the pace does not wait for answers.
func (f *fleet) offer(ctx context.Context, p *paced) {
	defer close(p.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	tk := time.NewTicker(f.d.o.Interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		wg.Go(func() {
			o, ra := send(ctx, p.rep.url, rolloutKey, smallBody)
			if ctx.Err() != nil {
				return // the replica is being stopped: not counted
			}
			f.mu.Lock()
			f.t.add(o, ra)
			f.mu.Unlock()
		})
	}
}

// remove stops the named replica's caller, then the replica.
func (f *fleet) remove(name string) {
	f.mu.Lock()
	p := f.byName[name]
	delete(f.byName, name)
	f.order = deleteName(f.order, name)
	f.mu.Unlock()
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
	p.rep.stop()
}

func (f *fleet) stopAll() {
	f.mu.Lock()
	names := append([]string(nil), f.order...)
	f.mu.Unlock()
	for _, n := range names {
		f.remove(n)
	}
}

// take returns what was answered since the last take and starts again.
func (f *fleet) take() tally {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.t
	f.t = tally{}
	return t
}

func (f *fleet) names() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.order, ",")
}

func deleteName(s []string, name string) []string {
	out := s[:0]
	for _, x := range s {
		if x != name {
			out = append(out, x)
		}
	}
	return out
}
