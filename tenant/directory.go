package tenant

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/internal/keysum"
	"github.com/switchover-gw/switchover/internal/quantity"
	"github.com/switchover-gw/switchover/ledger"
)

// KeyStore is where virtual keys and teams are kept; ledger.Store
// implements it.
type KeyStore interface {
	ledger.KeyLookup
	Keys(ctx context.Context) ([]ledger.Key, error)
	Teams(ctx context.Context) ([]ledger.Team, error)
}

// Errors of Authenticate; test them with errors.Is. An error that is none
// of these is the store's: the key may be good, but could not be checked.
var (
	ErrNoKey      = errors.New("no key presented")
	ErrUnknownKey = errors.New("unknown key")
	ErrRevoked    = ledger.ErrRevoked
	ErrExpired    = ledger.ErrExpired
)

// ConfigKey is a key from the configuration file, with its secret.
type ConfigKey struct {
	Secret string
	Principal
}

// Directory finds the key a caller presented: keys from the configuration
// (SetConfig) and from a store (Refresh), in memory. A secret of the
// store's form that the memory does not know (a key made a moment ago on
// another replica) is looked up in the store once, and a miss is
// remembered for a while. It is safe for concurrent use.
type Directory struct {
	clock clock.Clock
	store KeyStore

	snap   atomic.Pointer[snapshot]
	mu     sync.Mutex // serialises SetConfig and Refresh
	config struct {
		keys    map[[sha256.Size]byte]*Principal
		teams   map[string]Limits
		shares  map[string]bool // teams whose keys share stored objects
		orgs    map[string]Limits
		teamOrg map[string]string // the org of each team of the configuration
	}
	stored struct {
		keys  map[string]storedKey
		teams map[string]Limits
	}
	misses sync.Map // prefix → time.Time of a miss in the store
	nmiss  atomic.Int64
	// reads numbers each Refresh's read of the store; read is the number
	// of the read published last, so that a slow read never replaces
	// what a later one published (a background refresh overtaken by the
	// admin API's would bring a rotated secret back).
	reads atomic.Uint64
	read  uint64
}

type storedKey struct {
	key ledger.Key
	p   *Principal
}

type snapshot struct {
	required bool
	config   map[[sha256.Size]byte]*Principal
	stored   map[string]storedKey // by prefix, and by a rotated secret's prefix
	teams    map[string]Limits    // the configuration's win over the store's
	shares   map[string]bool      // teams whose keys share stored objects
	periods  []string             // of the budgets of keys and teams
	pools    bool                 // some key has budgets of one pool
	lookback time.Duration        // how far back budgets read per-request records
	orgs     map[string]Limits
	teamOrg  map[string]string
	members  map[string][]string // "org:NAME" → its teams' subjects
}

// KeyByPrefix implements ledger.KeyLookup over the memory.
func (s *snapshot) KeyByPrefix(_ context.Context, prefix string) (ledger.Key, error) {
	if k, ok := s.stored[prefix]; ok {
		return k.key, nil
	}
	return ledger.Key{}, ledger.ErrNotFound
}

// missFor is how long a prefix the store did not know is not asked again.
const missFor = 2 * time.Second

// maxMisses bounds the remembered misses; past it they are forgotten.
const maxMisses = 10000

// NewDirectory returns a directory over store (nil: keys from the
// configuration only).
func NewDirectory(c clock.Clock, store KeyStore) *Directory {
	d := &Directory{clock: clock.Or(c), store: store}
	d.publish()
	return d
}

// SetConfig replaces the configuration's keys and teams.
func (d *Directory) SetConfig(keys []ConfigKey, teams []Team) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.config.teams = make(map[string]Limits, len(teams))
	d.config.shares = map[string]bool{}
	d.config.teamOrg = map[string]string{}
	for _, t := range teams {
		d.config.teams[t.Name] = t.Limits
		if t.Org != "" {
			d.config.teamOrg[t.Name] = t.Org
		}
		if t.ShareObjects {
			d.config.shares[t.Name] = true
		}
	}
	d.config.keys = make(map[[sha256.Size]byte]*Principal, len(keys))
	for _, k := range keys {
		p := k.Principal
		p.Source = "config"
		p.ShareObjects = p.Team != "" && d.config.shares[p.Team]
		d.config.keys[sha256.Sum256([]byte(k.Secret))] = p.withNames()
	}
	if d.stored.keys != nil { // the teams' sharing may have changed: new principals
		stored := make(map[string]storedKey, len(d.stored.keys))
		for prefix, k := range d.stored.keys {
			stored[prefix] = storedKey{key: k.key, p: principalOf(k.key, d.config.shares)}
		}
		d.stored.keys = stored
	}
	d.publish()
}

// SetOrgs replaces the configuration's organisations (teams name theirs
// in SetConfig).
func (d *Directory) SetOrgs(orgs []Org) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.config.orgs = make(map[string]Limits, len(orgs))
	for _, o := range orgs {
		d.config.orgs[o.Name] = o.Limits
	}
	d.publish()
}

// Refresh reads the store's keys and teams into memory. Until the first
// Refresh succeeds only the configuration's keys (and keys found one by
// one) work; after a failure the last ones read keep working.
func (d *Directory) Refresh(ctx context.Context) error {
	if d.store == nil {
		return nil
	}
	n := d.reads.Add(1)
	keys, err := d.store.Keys(ctx)
	if err != nil {
		return fmt.Errorf("reading keys: %w", err)
	}
	teams, err := d.store.Teams(ctx)
	if err != nil {
		return fmt.Errorf("reading teams: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if n < d.read {
		return nil // a read begun after this one was published already
	}
	d.read = n
	d.stored.keys = make(map[string]storedKey, len(keys))
	for _, k := range keys {
		sk := storedKey{key: k, p: principalOf(k, d.config.shares)}
		d.stored.keys[k.Prefix] = sk
		if k.PrevPrefix != "" { // a rotated secret, which ledger.Verify refuses once its grace ends
			d.stored.keys[k.PrevPrefix] = sk
		}
	}
	d.stored.teams = make(map[string]Limits, len(teams))
	for _, t := range teams {
		d.stored.teams[t.Name] = Limits{RPM: t.RPM, TPM: t.TPM, Budget: t.Budget, BudgetPeriod: t.BudgetPeriod, SoftBudget: t.SoftBudget}
	}
	d.publish()
	return nil
}

// publish builds the snapshot requests read. Called with d.mu held (or
// before d is shared).
func (d *Directory) publish() {
	s := &snapshot{config: d.config.keys, stored: d.stored.keys, teams: map[string]Limits{}, shares: d.config.shares}
	for n, l := range d.stored.teams {
		s.teams[n] = l
	}
	for n, l := range d.config.teams {
		s.teams[n] = l
	}
	s.required = d.store != nil || len(s.config) > 0
	s.orgs, s.teamOrg, s.members = d.config.orgs, map[string]string{}, map[string][]string{}
	for team, o := range d.config.teamOrg {
		if _, ok := s.orgs[o]; ok {
			s.teamOrg[team] = o
			s.members["org:"+o] = append(s.members["org:"+o], "team:"+team)
		}
	}
	for o := range s.orgs {
		if s.members["org:"+o] == nil {
			s.members["org:"+o] = []string{} // no teams: no spend
		}
	}
	s.periods, s.pools = periodsOf(s)
	s.lookback = lookbackOf(s)
	d.snap.Store(s)
}

// periodsOf returns the budget periods of s's keys and teams, each once,
// and whether some key has budgets of one pool.
func periodsOf(s *snapshot) (periods []string, pools bool) {
	seen := map[string]bool{}
	add := func(l Limits) {
		if l.Budget > 0 && l.BudgetPeriod != "" {
			seen[l.BudgetPeriod] = true
		}
	}
	key := func(p *Principal) {
		add(p.Limits)
		for _, b := range p.PoolBudgets {
			add(Limits{Budget: b.Budget, BudgetPeriod: b.Period})
			pools = true
		}
	}
	for _, p := range s.config {
		key(p)
	}
	for _, k := range s.stored {
		key(k.p)
	}
	for _, l := range s.teams {
		add(l)
	}
	for _, l := range s.orgs {
		add(l)
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, pools
}

// Org returns the organisation of team, and its limits.
func (d *Directory) Org(team string) (name string, lim Limits, ok bool) {
	s := d.snap.Load()
	name, ok = s.teamOrg[team]
	if !ok {
		return "", Limits{}, false
	}
	return name, s.orgs[name], true
}

// Members returns the subjects whose spend is subject's: an org's teams
// ("team:NAME"); nil for any other subject (for Spend.SetMembers).
func (d *Directory) Members(subject string) []string { return d.snap.Load().members[subject] }

// PoolBudgets reports whether some key has budgets of one pool (for
// Spend.SetPoolBudgets).
func (d *Directory) PoolBudgets() bool { return d.snap.Load().pools }

// lookbackOf returns how far back from now the budgets of s's keys,
// teams and organisations read per-request usage records (which
// store.retention deletes), as opposed to the daily sums: an end user's
// budget reads its records from its period's start (a month: up to 31
// days back); a budget of hours ("12h", not whole days) reads by hour
// from the midnight before its period's start (up to a day more than
// its length). 0 when no budget reads them.
func lookbackOf(s *snapshot) time.Duration {
	var longest time.Duration
	read := func(budget float64, period string, extra time.Duration, always bool) {
		if budget <= 0 {
			return // most keys: no period to read (100,000 keys at each publish)
		}
		n, ok := quantity.PeriodLength(period)
		if n == 0 {
			n = 31 * 24 * time.Hour // a month
		}
		if budget <= 0 || !ok || !always && n%(24*time.Hour) == 0 {
			return // none, or whole days: the daily sums
		}
		longest = max(longest, n+extra)
	}
	add := func(l Limits) {
		read(l.Budget, l.BudgetPeriod, 24*time.Hour, false)
		read(l.EndUser.Budget, l.EndUser.BudgetPeriod, 0, true)
	}
	key := func(p *Principal) {
		add(p.Limits)
		for _, b := range p.PoolBudgets {
			read(b.Budget, b.Period, 24*time.Hour, false)
		}
	}
	for _, p := range s.config {
		key(p)
	}
	for _, k := range s.stored {
		key(k.p)
	}
	for _, l := range s.teams {
		add(l)
	}
	for _, l := range s.orgs {
		add(l)
	}
	return longest
}

// RequestLookback returns how far back from now the budgets of the keys,
// teams and organisations known read per-request usage records: the
// least a retention of those records must keep (ledger's
// RetentionOptions.Hold). 0 when none does. Safe for concurrent use.
func (d *Directory) RequestLookback() time.Duration { return d.snap.Load().lookback }

// Periods returns the budget periods of the keys and teams known, each
// once (for Spend.SetPeriods).
func (d *Directory) Periods() []string { return d.snap.Load().periods }

// principalOf is the principal of a store's key; shares are the teams
// whose keys share stored objects.
func principalOf(k ledger.Key, shares map[string]bool) *Principal {
	p := &Principal{ID: k.ID, Name: k.Name, Team: k.Team, Pools: k.Pools, Models: k.Models, Tags: k.Tags, Source: "store", Patience: k.Patience,
		Cache: k.Cache.Effective(), RequestLog: k.RequestLog,
		ShareObjects: k.Team != "" && shares[k.Team],
		Limits: Limits{RPM: k.RPM, TPM: k.TPM, MaxConcurrent: k.MaxConcurrent, Budget: k.Budget, BudgetPeriod: k.BudgetPeriod,
			SoftBudget: k.SoftBudget}}
	for _, b := range k.Budgets {
		p.PoolBudgets = append(p.PoolBudgets, PoolBudget{Pool: b.Pool, Budget: b.Budget, Period: b.Period})
	}
	return p.withNames()
}

// StoredKeys returns the number of keys read from the store.
func (d *Directory) StoredKeys() int {
	n := 0
	for prefix, k := range d.snap.Load().stored {
		if prefix == k.key.Prefix {
			n++
		}
	}
	return n
}

// Required reports whether callers must present a key: some key is
// configured, or a store holds them.
func (d *Directory) Required() bool { return d.snap.Load().required }

// Team returns the limits of team name.
func (d *Directory) Team(name string) (Limits, bool) {
	l, ok := d.snap.Load().teams[name]
	return l, ok
}

// Authenticate returns the key whose secret was presented. It costs one
// map lookup for a known key, whatever the number of keys.
func (d *Directory) Authenticate(ctx context.Context, secret string) (*Principal, error) {
	if secret == "" {
		return nil, ErrNoKey
	}
	s := d.snap.Load()
	if p, ok := s.config[keysum.Sum(secret)]; ok {
		return p, nil
	}
	now := d.clock.Now()
	k, err := ledger.Verify(ctx, s, secret, now)
	if err == nil {
		return s.stored[k.Prefix].p, nil
	}
	if !errors.Is(err, ledger.ErrNotFound) {
		return nil, err // revoked or expired
	}
	prefix, form := ledger.LookupPrefix(secret)
	if d.store == nil || !form {
		return nil, ErrUnknownKey
	}
	if _, known := s.stored[prefix]; known {
		return nil, ErrUnknownKey // the prefix is ours, the secret is wrong
	}
	if at, ok := d.misses.Load(prefix); ok && now.Sub(at.(time.Time)) < missFor {
		return nil, ErrUnknownKey
	}
	k, err = ledger.Verify(ctx, d.store, secret, now)
	switch {
	case err == nil:
		return principalOf(k, s.shares), nil
	case errors.Is(err, ledger.ErrNotFound):
		if d.nmiss.Add(1) > maxMisses {
			d.misses.Clear()
			d.nmiss.Store(0)
		}
		d.misses.Store(prefix, now)
		return nil, ErrUnknownKey
	}
	return nil, err
}
