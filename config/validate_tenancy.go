package config

import (
	"fmt"
	"strings"
	"time"
)

// validateTenancy checks keys' limits, teams and the store. pools holds
// every pool's name.
func (c *Config) validateTenancy(ps *Problems, pools map[string]bool) {
	teams := c.validateTeams(ps)
	c.validateKeyLimits(ps, pools, teams)
	c.validateObjectOwners(ps)
	if s := c.Store; s != nil {
		s.validate(ps)
	}
}

// validateOrgs checks that every org has a unique name and limits an org
// may have (a team's), and returns the orgs' names.
func (c *Config) validateOrgs(ps *Problems) (names map[string]bool) {
	names = map[string]bool{}
	for i, o := range c.Orgs {
		p := fmt.Sprintf("orgs[%d]", i)
		switch {
		case o.Name == "":
			ps.add(p+".name", "an org needs a name")
		case names[o.Name]:
			ps.add(p+".name", "org name %q is used twice", o.Name)
		}
		names[o.Name] = true
		validateLimits(ps, p, o.Limits, true)
	}
	return names
}

// validateTeams checks that every team has a unique name, limits a team
// may have and an org that exists, and returns the teams' names.
func (c *Config) validateTeams(ps *Problems) (names map[string]bool) {
	orgs := c.validateOrgs(ps)
	names = map[string]bool{}
	for i, t := range c.Teams {
		if t.Org != "" && !orgs[t.Org] {
			ps.add(fmt.Sprintf("teams[%d].org", i), "no org is named %q (add it under orgs)", t.Org)
		}
		p := fmt.Sprintf("teams[%d]", i)
		switch {
		case t.Name == "":
			ps.add(p+".name", "a team needs a name")
		case names[t.Name]:
			ps.add(p+".name", "team name %q is used twice", t.Name)
		}
		names[t.Name] = true
		validateLimits(ps, p, t.Limits, true)
	}
	return names
}

// validateKeyLimits checks the file's keys against the store's names,
// their limits, and the pools, models and team they name.
func (c *Config) validateKeyLimits(ps *Problems, pools, teams map[string]bool) {
	models := map[string]bool{}
	for _, pl := range c.Pools {
		models[pl.Name] = true
		for _, a := range pl.Aliases {
			models[a] = true
		}
	}
	for i, k := range c.Keys {
		p := fmt.Sprintf("keys[%d]", i)
		if strings.HasPrefix(k.Name, "key_") {
			ps.add(p+".name", "%q: names starting with key_ are the store's key IDs; choose another", k.Name)
		}
		validateLimits(ps, p, k.Limits, false)
		for j, pl := range k.Pools {
			if !pools[pl] {
				ps.add(fmt.Sprintf("%s.pools[%d]", p, j), "no pool is named %q", pl)
			}
		}
		for j, m := range k.Models {
			if !models[m] {
				ps.add(fmt.Sprintf("%s.models[%d]", p, j), "no pool is named %q or has it as an alias", m)
			}
		}
		c.validatePoolBudgets(ps, p, k.Budgets, pools, models)
		if k.Team != "" && !teams[k.Team] && !c.Store.Enabled() {
			ps.add(p+".team", "no team is named %q (add it under teams)", k.Team)
		}
	}
}

// validatePoolBudgets checks a key's budgets of one pool, at path p.
func (c *Config) validatePoolBudgets(ps *Problems, p string, bs []PoolBudget, pools, models map[string]bool) {
	seen := map[string]bool{}
	for j, b := range bs {
		q := fmt.Sprintf("%s.budgets[%d]", p, j)
		switch {
		case (b.Pool == "") == (b.Model == ""):
			ps.add(q, "give pool or model (one of them)")
			continue
		case b.Pool != "" && !pools[b.Pool]:
			ps.add(q+".pool", "no pool is named %q", b.Pool)
			continue
		case b.Model != "" && !models[b.Model]:
			ps.add(q+".model", "no pool is named %q or has it as an alias", b.Model)
			continue
		case b.Budget.IsZero():
			ps.add(q, "needs a budget such as 10/day")
		}
		if pool := b.PoolIn(c); seen[pool] {
			ps.add(q, "pool %q has a budget already on this key", pool)
		} else {
			seen[pool] = true
		}
	}
}

// warnKeyTeams warns, with a store, of keys of the file whose team is
// not a team of the file: the team must then be the store's (made with
// switchover teams set), or the key gets no team limits. Without a store
// such a key is an error (validateKeyLimits).
func (c *Config) warnKeyTeams() Problems {
	teams := map[string]bool{}
	for _, t := range c.Teams {
		teams[t.Name] = true
	}
	var ws Problems
	for i, k := range c.Keys {
		if k.Team != "" && !teams[k.Team] {
			ws = append(ws, Problem{Path: fmt.Sprintf("keys[%d].team", i),
				Msg: fmt.Sprintf("no team of this file is named %q: it must be a team of the store (switchover teams set %s), or the key gets no team limits", k.Team, k.Team)})
		}
	}
	return ws
}

// validateLimits checks the limits l of a key, or with team of a team, at
// path p.
func validateLimits(ps *Problems, p string, l Limits, team bool) {
	if l.MaxConcurrent < 0 {
		ps.add(p+".max_concurrent", "must not be negative")
	}
	if team && l.MaxConcurrent != 0 {
		ps.add(p+".max_concurrent", "is a limit of keys, not of teams or orgs")
	}
	switch soft := float64(l.SoftBudget); {
	case soft > 0 && l.Budget.IsZero():
		ps.add(p+".soft_budget", "is an alert below the budget: set budget too")
	case soft > 0 && soft >= l.Budget.USD:
		ps.add(p+".soft_budget", "$%g is not below the budget (%s)", soft, l.Budget)
	}
}

// validate checks a store that is set: exactly one database, a buffer
// and a refresh interval that make sense.
func (s *Store) validate(ps *Problems) {
	if s.SQLite != "" && s.Postgres != "" {
		ps.add("store", "set sqlite or postgres, not both")
	}
	if !s.Enabled() {
		ps.add("store", "set sqlite (a file, for one replica) or postgres (for several)")
	}
	if s.Buffer < 0 {
		ps.add("store.buffer", "must not be negative")
	}
	if s.Refresh != 0 && s.Refresh.D() < 100*time.Millisecond {
		ps.add("store.refresh", "%s is too often; use 1s or more", s.Refresh)
	}
	if r := s.Retention; r != "" && r != "0" {
		if d, err := parseRetention(r); err != nil {
			ps.add("store.retention", "%v (or 0: forever)", err)
		} else if d < MinRetention {
			ps.add("store.retention", "%s is shorter than 32d: a budget's period must find its records (0 keeps them forever)", r)
		}
	}
	if r := s.AuditRetention; r != "" && r != "0" {
		if d, err := parseRetention(r); err != nil {
			ps.add("store.audit_retention", "%v (or 0: forever)", err)
		} else if d < 24*time.Hour {
			ps.add("store.audit_retention", "%s is shorter than 1d (0 keeps the audit trail forever)", r)
		}
	}
}
