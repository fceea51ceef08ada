// Package tenant decides who a request is from and whether it may start:
// the gateway's keys (from the configuration and from the ledger's store),
// their teams, and the limits on both: requests and tokens per minute,
// requests in flight, allowed pools and models, and budgets per period.
//
// Everything is decided from memory. Keys from the store are read into an
// index that is refreshed in the background; spend is the store's last
// figure plus what this replica spent since; rate buckets are this
// replica's, debited with what the other replicas report (see Exchange).
// A request never waits for a database.
package tenant

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/ledger"
)

// Limits bound one key or team. Zero fields are unlimited.
type Limits struct {
	RPM, TPM      int64
	MaxConcurrent int // keys only
	// Budget is in US dollars per BudgetPeriod ("day", "week", "month",
	// or hours or days such as "1h", "30d": see ledger.PeriodStart).
	Budget       float64
	BudgetPeriod string
	// EndUser bounds each end user of the key or team (see
	// EndUserLimits); zero is none.
	EndUser EndUserLimits
	// SoftBudget is an alert threshold below Budget (US dollars per the
	// same period): reaching it sends one BudgetAlert (Soft) per period
	// in place of the one at 80%. It refuses nothing. Zero: none.
	SoftBudget float64
}

// Principal is a key as the gateway enforces it.
type Principal struct {
	// ID names the key in usage, metrics and logs: the store's key ID
	// ("key_…"), or the name of a key from the configuration.
	ID string
	// Name is the key's label ("" for a store key without one).
	Name string
	// Team names the key's team, whose limits also apply; "" for none.
	Team string
	// Pools and Models the key may use; empty is all.
	Pools, Models []string
	// Tags are the key's tags, recorded with each of its requests' usage.
	Tags   []string
	Limits Limits
	// PoolBudgets bound the key's spend on one pool each, on top of its
	// own budget (keys[].budgets); nil is none.
	PoolBudgets []PoolBudget
	// Patience is this key's default wait for quota (a request's
	// x-switchover-max-wait wins); zero is the pool's.
	Patience time.Duration
	// Cache is the key's own response cache policy, which wins over its
	// pools' (proxy's cacheLookup); nil: its pools'. Never Shared.
	Cache *cachepolicy.Effective
	// RequestLog is a stored key's own request log settings (whether its
	// calls keep their bodies), which win over its pools' (proxy's
	// startCapture); nil: its pools'. A configuration key's are in the
	// engine's body routes instead.
	RequestLog *ledger.KeyRequestLog
	// Source is "config" or "store".
	Source string
	// ShareObjects says the key's team shares its stored objects (the
	// configuration's teams[].share_objects): the objects this key makes
	// belong to the team, and it reaches the team's. The Directory sets
	// it from the team.
	ShareObjects bool

	// keyName and teamName are the limiter's names for the key and its
	// team, made once by the Directory (see names).
	keyName, teamName string
}

// names returns the limiter's names of p and its team.
func (p *Principal) names() (key, team string) {
	if p.keyName != "" {
		return p.keyName, p.teamName
	}
	key = "key:" + p.ID
	if p.Team != "" {
		team = "team:" + p.Team
	}
	return key, team
}

// withNames fills in p's names, for a principal about to be shared.
func (p *Principal) withNames() *Principal {
	p.keyName, p.teamName = "", ""
	p.keyName, p.teamName = p.names()
	return p
}

// PoolBudget is a budget of a key's spend on one pool, in US dollars per
// Period (as Limits.BudgetPeriod).
type PoolBudget struct {
	Pool   string
	Budget float64
	Period string
}

// PoolBudget returns p's budget of pool as Limits (Budget and
// BudgetPeriod), and whether it has one.
func (p *Principal) PoolBudget(pool string) (Limits, bool) {
	if pool == "" {
		return Limits{}, false
	}
	for _, b := range p.PoolBudgets {
		if b.Pool == pool {
			return Limits{Budget: b.Budget, BudgetPeriod: b.Period}, true
		}
	}
	return Limits{}, false
}

// Team is a team's limits (MaxConcurrent unused), and whether its keys
// share their stored objects.
type Team struct {
	Name         string
	Limits       Limits
	ShareObjects bool
	// Org names the team's organisation (see Org); "" for none.
	Org string
}

// Org is an organisation: limits and a budget shared by its teams, on
// top of theirs. Orgs come from the configuration only.
type Org struct {
	Name   string
	Limits Limits
}

// Allows reports whether p may use pool by the model name model; an
// empty pool or model is not checked.
func (p *Principal) Allows(pool, model string) bool { return p.allows(pool, model) }

// Restricted reports whether p is limited to some pools or models.
func (p *Principal) Restricted() bool { return len(p.Pools) > 0 || len(p.Models) > 0 }

// NotAllowed is the refusal of a call p may not make: what ("pool" or
// "model") named name is not one it may use. 403 model_not_allowed.
func NotAllowed(p *Principal, what, name string) *Refusal {
	return &Refusal{Status: http.StatusForbidden, Code: "model_not_allowed", Subject: "key", Name: p.ID, Limit: what,
		Message: fmt.Sprintf("switchover: key %s may not use %s %q", p.display(), what, name)}
}

// allows reports whether p may use pool by the model name model; an
// empty pool or model is not checked.
func (p *Principal) allows(pool, model string) bool {
	if pool != "" && len(p.Pools) > 0 && !slices.Contains(p.Pools, pool) {
		return false
	}
	return model == "" || len(p.Models) == 0 || slices.Contains(p.Models, model)
}

// MaxEndUser is the longest end user (Ask.EndUser), in bytes, the
// gateway takes: the usage store's limit (ledger.MaxEndUser).
const MaxEndUser = ledger.MaxEndUser

// Refusal is why a request may not start. Its figures fill the 429's
// message and headers.
type Refusal struct {
	// Status is 429 for limits and budgets, 403 for a pool or model the
	// key may not use.
	Status int
	// Code is rate_limit_exceeded, budget_exceeded or model_not_allowed.
	Code string
	// Subject is "key" or "team"; Name is the key's ID or the team's
	// name.
	Subject, Name string
	// Limit is what was exceeded: "requests per minute", "tokens per
	// minute", "concurrent requests", "budget", "pool" or "model" (and,
	// from the gateway's per-key shares, "request body memory").
	Limit string
	// Max and Used are the limit and what is used of it (dollars for a
	// budget). For a rate, Max is per minute and Used what the last ten
	// seconds took of the ten seconds' worth a key may use at once;
	// Remaining is what is left of that now.
	Max, Used, Remaining float64
	// Reset is when the limit has room again (for a budget, the end of
	// its period); RetryAfter the wait until then.
	Reset      time.Time
	RetryAfter time.Duration
	Message    string
}

func (r *Refusal) Error() string { return r.Message }
