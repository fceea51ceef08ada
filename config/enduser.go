package config

import "fmt"

// EndUserLimits bound each end user of a key, or of a team's keys
// together (Limits.EndUserLimits). The end user is the request's "user"
// (or "safety_identifier"), Anthropic's metadata.user_id, or the
// x-switchover-end-user header, which wins; a request without one is
// held only to its key's and team's own limits. End users of two keys
// are never the same, nor of two teams. Zero fields are unlimited.
type EndUserLimits struct {
	// RPM and TPM bound each end user's requests and tokens per minute,
	// as a key's do, but on each replica: they are not shared between
	// replicas. Default unlimited.
	RPM Count `yaml:"rpm"`
	TPM Count `yaml:"tpm"`
	// Budget is each end user's budget, as "1/day" (US dollars per day,
	// week or month). It counts the store's record of the end user's
	// spend (read when it is first met, and every 30 s while it is
	// active) plus this replica's since: other replicas' spend arrives up
	// to about 30 s late. Until the store's figure is first read an end
	// user may spend a tenth of its budget on a replica (at least one
	// request), then is refused with a retry in a second. Default none.
	Budget Budget `yaml:"budget"`
}

// IsZero reports whether no end-user limit is set.
func (e EndUserLimits) IsZero() bool { return e == EndUserLimits{} }

// warnEndUserBudgets warns of end users' budgets without a store: spend
// is then forgotten at a restart, and when an end user is forgotten to
// make room for others.
func (c *Config) warnEndUserBudgets() Problems {
	if c.Store.Enabled() {
		return nil
	}
	const msg = "without a store, each end user's spend is counted from when this replica met it: a restart, or an end user forgotten to make room for others (the 20,000 most recent are kept), forgets it; add store: {sqlite: FILE}"
	var ws Problems
	for i, k := range c.Keys {
		if !k.EndUserLimits.Budget.IsZero() {
			ws = append(ws, Problem{Path: fmt.Sprintf("keys[%d].end_user_limits.budget", i), Msg: msg})
		}
	}
	for i, t := range c.Teams {
		if !t.EndUserLimits.Budget.IsZero() {
			ws = append(ws, Problem{Path: fmt.Sprintf("teams[%d].end_user_limits.budget", i), Msg: msg})
		}
	}
	return ws
}

// warnEndUserRatesPerReplica warns of end users' rpm and tpm with
// state.redis: budgets, keys', teams' and organisations' rates are then
// the fleet's, but end users' rates stay each replica's (they are too
// many to exchange), so N replicas admit up to N times each.
func (c *Config) warnEndUserRatesPerReplica() Problems {
	if c.State.Redis == nil {
		return nil
	}
	const msg = "state.redis shares budgets (end users' too) and the rates of keys, teams and organisations, but not end users' rpm and tpm: each replica holds every end user to them on its own, so N replicas admit up to N times as much of an end user; lower them by the number of replicas if that matters"
	var ws Problems
	check := func(path string, e EndUserLimits) {
		if e.RPM != 0 {
			ws = append(ws, Problem{Path: path + ".rpm", Msg: msg})
		}
		if e.TPM != 0 {
			ws = append(ws, Problem{Path: path + ".tpm", Msg: msg})
		}
	}
	for i, k := range c.Keys {
		check(fmt.Sprintf("keys[%d].end_user_limits", i), k.EndUserLimits)
	}
	for i, t := range c.Teams {
		check(fmt.Sprintf("teams[%d].end_user_limits", i), t.EndUserLimits)
	}
	return ws
}
