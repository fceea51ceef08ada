package fleet

import (
	"context"
	"time"
)

// Budgets holds the reservations and spend of budgets for every replica
// of a fleet (fleet/redisstore's Store has it), so that a budget holds
// for the fleet and not per replica. Amounts are integer nano-dollars, as
// the ledger stores costs. An implementation must be safe for concurrent
// use, and each call atomic: another replica's call sees all of it or
// none.
type Budgets interface {
	// HoldBudget reserves each line's Amount against its budget under
	// id until deadline, on every line or on none: it holds them when,
	// on every line, spent plus what is held is under Budget and, with
	// Amount added, within it. Holds whose deadline is at or before now
	// are dropped first (a replica that died holding them). A line's
	// spent starts from its Seed when the implementation has none for
	// it, and is never below Seed. It returns whether it held them, and
	// each line's spent and held before this hold.
	HoldBudget(ctx context.Context, id string, lines []BudgetLine, now, deadline time.Time) (held bool, figures []BudgetFigures, err error)
	// SettleBudget ends hold id (a hold that expired or was never made
	// is no error) and adds cost to every line's spent, which is never
	// below its Seed after (Seed includes cost: it is the replica's own
	// figure once the cost was counted). A cost of zero releases the
	// hold. now is the caller's time, as in HoldBudget.
	SettleBudget(ctx context.Context, id string, lines []BudgetLine, cost int64, now time.Time) error
}

// BudgetLine is one budget of a hold, in one period: a key's, a team's,
// an organisation's, a key's of one pool, or an end user's.
type BudgetLine struct {
	// Subject names the budget's owner ("key:ID", "team:NAME"), Start
	// its period; together they name the account.
	Subject string
	Start   time.Time
	// End is when the period ends: the account may be forgotten some
	// time after (measured from the caller's now, so that a skewed clock
	// does not drop it early).
	End time.Time
	// Budget is the budget, Amount what the hold reserves against it.
	Budget, Amount int64
	// Seed is the caller's own figure of what was spent in the period
	// (the store's, plus what it spent since): the floor of spent.
	Seed int64
	// Keep is how long the account is kept after End (from the caller's
	// now, as End). Zero means a day. Accounts of many short-lived
	// subjects (end users) keep less, so that memory is bounded by the
	// subjects of one period.
	Keep time.Duration
}

// BudgetFigures are a budget's spent and held amounts.
type BudgetFigures struct {
	Spent, Held int64
}
