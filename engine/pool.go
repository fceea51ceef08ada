package engine

import (
	"time"

	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tokens"
)

// defaultTokens is the counter of pools whose Deps name none: stateless
// but for its vocabularies, loaded once at the first count that needs them.
var defaultTokens = &tokens.Counter{}

// newPool builds pc's pool over backends, with the operators' overrides
// (Deps.Override) applied.
func newPool(pc config.Pool, backends map[string]*route.Backend, d Deps) *route.Pool {
	p := &route.Pool{
		Name:     pc.Name,
		Attempts: pc.Retry.Attempts,
		RetryOn:  statusSet(pc.Retry.On),
		// How long retries may go on.
		TryDuration: pc.Retry.Budget.D(),
		Observer:    d.Observer,
		Clock:       d.Clock,
		Tokens:      d.Tokens,
	}
	if p.Tokens == nil {
		p.Tokens = defaultTokens
	}
	p.MaxWait, p.MaxWaitLimit, p.MaxQueue = pc.Queue.MaxWait.D(), pc.Queue.MaxWaitLimit.D(), pc.Queue.MaxLength
	if rb := pc.RetryBudget; !rb.Disabled {
		p.RetryBudget = &route.RetryBudget{Ratio: rb.Ratio, MinPerSecond: rb.MinPerSecond, Window: rb.Window.D()}
	}
	if h := pc.Hedge; h != nil {
		p.Hedge = &route.Hedge{Delay: h.After.Delay, Quantile: h.After.Quantile, Share: h.Share}
	}
	p.Selector = selector(pc.Strategy, d)
	for _, mc := range pc.Members {
		m := &route.Member{Backend: backends[mc.Backend], Priority: mc.Priority, Weight: mc.Weight, Deployment: mc.Model, MaxTokens: mc.MaxTokens}
		if d.Override != nil {
			if prio, weight := d.Override(pc.Name, mc.Backend); prio > 0 || weight > 0 {
				if prio > 0 {
					m.Priority = prio
				}
				if weight > 0 {
					m.Weight = weight
				}
			}
		}
		p.Members = append(p.Members, m)
	}
	return p
}

// selector is the strategy named name; nil (the pool's default, by
// priority) for "" and "priority". The headroom strategy reads each
// backend's quota on d's clock.
func selector(name string, d Deps) route.Selector {
	if name == "" || name == route.StrategyPriority {
		return nil
	}
	sel, err := route.NewStrategy(name)
	if err != nil {
		return nil // config.Validate refuses unknown names
	}
	if h, ok := sel.(*route.Headroom); ok {
		clk := clock.Or(d.Clock)
		h.Remaining = func(b *route.Backend) (float64, bool) {
			if q, ok := b.Quota.(interface {
				Headroom(time.Time) (float64, bool)
			}); ok {
				return q.Headroom(clk.Now())
			}
			return 0, false
		}
	}
	return sel
}
