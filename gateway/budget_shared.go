package gateway

import (
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/tenant"
)

// shareBudgets holds the budgets of lim in the fleet's store when it can
// (Redis, state.redis: see tenant.SharedBudget), so that the replicas'
// requests in flight and spend count against one budget. A call that
// fails is counted (switchover_budget_shared_fallbacks_total) and the
// request is held against this replica's view alone; the first failure
// after a success, and the first success after a failure, are logged.
func (g *Gateway) shareBudgets(lim *tenant.Limiter) {
	if g.fleet == nil {
		return
	}
	b, ok := g.fleet.store.(fleet.Budgets)
	if !ok {
		return
	}
	lim.Shared = b
	lim.OnShared = func(err error, changed bool) {
		if err != nil {
			g.Metrics.BudgetFallback()
		}
		switch {
		case changed && err != nil:
			g.Logger.Warn("budgets: the shared state store does not answer; each replica holds its budgets against its own requests in flight and the store's spend until it does (a budget can overshoot by the other replicas' spend meanwhile)", "error", err)
		case changed:
			g.Logger.Info("budgets: the shared state store answers again; budgets are held for the whole fleet")
		}
	}
}
