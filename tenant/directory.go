package tenant

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/clock"
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
		keys   map[[sha256.Size]byte]*Principal
		teams  map[string]Limits
		shares map[string]bool // teams whose keys share stored objects
	}
	stored struct {
		keys  map[string]storedKey
		teams map[string]Limits
	}
	misses sync.Map // prefix → time.Time of a miss in the store
	nmiss  atomic.Int64
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
	for _, t := range teams {
		d.config.teams[t.Name] = t.Limits
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

// Refresh reads the store's keys and teams into memory. Until the first
// Refresh succeeds only the configuration's keys (and keys found one by
// one) work; after a failure the last ones read keep working.
func (d *Directory) Refresh(ctx context.Context) error {
	if d.store == nil {
		return nil
	}
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
		d.stored.teams[t.Name] = Limits{RPM: t.RPM, TPM: t.TPM, Budget: t.Budget, BudgetPeriod: t.BudgetPeriod}
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
	d.snap.Store(s)
}

// principalOf is the principal of a store's key; shares are the teams
// whose keys share stored objects.
func principalOf(k ledger.Key, shares map[string]bool) *Principal {
	p := &Principal{ID: k.ID, Name: k.Name, Team: k.Team, Pools: k.Pools, Models: k.Models, Tags: k.Tags, Source: "store", Patience: k.Patience,
		ShareObjects: k.Team != "" && shares[k.Team],
		Limits:       Limits{RPM: k.RPM, TPM: k.TPM, MaxConcurrent: k.MaxConcurrent, Budget: k.Budget, BudgetPeriod: k.BudgetPeriod}}
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
	if p, ok := s.config[sha256.Sum256([]byte(secret))]; ok {
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
