package gateway

import (
	"github.com/switchover-gw/switchover/engine"
	"github.com/switchover-gw/switchover/fleet"
)

// LimitSyncs returns how many times this replica exchanged its keys'
// rate-limit use with the fleet (tests wait on it instead of the clock).
func (g *Gateway) LimitSyncs() int64 { return g.ten.lim.Syncs() }

// DrainAs drains backend as an operator named who would from the console.
func (g *Gateway) DrainAs(backend, who string) error {
	return g.actAs(fleet.Action{Kind: fleet.ActionDrain, Backend: backend}, who)
}

// LocalEvents is this replica's own event history, without the fleet's.
func (g *Gateway) LocalEvents() []Event { return g.notes.events.list() }

// IdleConnections is the number of the API listener's connections that
// are idle (or new, nothing read yet), once Serve has started.
func (g *Gateway) IdleConnections() int {
	if cl := g.conns.Load(); cl != nil {
		return cl.idleCount()
	}
	return 0
}

// CacheWaiting is the number of calls waiting on an identical call in
// flight.
func (g *Gateway) CacheWaiting() int {
	if st := g.state.Load(); st != nil && st.Routes.Cache != nil {
		return st.Routes.Cache.Waiting()
	}
	return 0
}

// CacheFlights is the number of coalesced flights under way.
func (g *Gateway) CacheFlights() int {
	if st := g.state.Load(); st != nil && st.Routes.Cache != nil {
		return st.Routes.Cache.Flights()
	}
	return 0
}

// Engine is the engine in force.
func (g *Gateway) Engine() *engine.Engine { return g.state.Load() }
