package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
	"github.com/switchover-gw/switchover/metrics"
	"github.com/switchover-gw/switchover/notify"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
)

// tenancy is the gateway's keys, limits, budgets and usage store.
type tenancy struct {
	store  ledger.Store // nil without a store block
	writer *ledger.Writer
	dir    *tenant.Directory
	spend  *tenant.Spend
	lim    *tenant.Limiter
	// refresh is how often keys and spend are read back from the store.
	refresh time.Duration
	kick    chan struct{}
	done    chan struct{}
	// retention is store.retention (0: forever); retained is closed when
	// its goroutine has ended.
	retention time.Duration
	retained  chan struct{}
	// bodyRetention is store.body_retention (0: with the rows);
	// bodiesRetained is closed when its goroutine has ended.
	bodyRetention  time.Duration
	bodiesRetained chan struct{}
	// secrets are the configuration's, redacted from kept bodies.
	secrets secretCache
	// kind is "sqlite" or "postgres"; health whether the store's last
	// write and read worked.
	kind   string
	health storeHealth
	// audit writes the audit trail to the store; nil without one.
	audit *ledger.AuditLog
	// auditRetention is store.audit_retention (0: forever).
	auditRetention time.Duration
}

// StoreStatus is the store of keys and usage, in the admin API's status.
type StoreStatus struct {
	Kind string `json:"kind"`
	// Up is whether its last write and read worked.
	Up bool `json:"up"`
	// Buffered is the usage records waiting to be written; Dropped those
	// never written since the start (the buffer was full).
	Buffered int    `json:"buffered"`
	Dropped  uint64 `json:"dropped"`
	// Keys is the keys the store holds, as last read.
	Keys int `json:"keys"`
}

func (g *Gateway) storeStatus() *StoreStatus {
	t := g.ten
	if t == nil || t.store == nil {
		return nil
	}
	return &StoreStatus{Kind: t.kind, Up: t.health.Up(), Buffered: t.writer.Pending(), Dropped: t.writer.Dropped(), Keys: t.dir.StoredKeys()}
}

// limitsSync is how often a replica of a fleet exchanges what its keys
// took of their rate limits.
const limitsSync = 500 * time.Millisecond

// startTenancy opens the store (Options.Ledger, or the configuration's
// store block) and builds the key directory and the limiter, which every
// engine's routes then use (deps). Store settings need a restart to
// change.
func (g *Gateway) startTenancy(ctx context.Context, cfg *config.Config) error {
	t := &tenancy{kick: make(chan struct{}, 1), refresh: 5 * time.Second}
	store := g.opts.Ledger
	if sc := cfg.Store; store == nil && sc.Enabled() {
		var err error
		if sc.SQLite != "" {
			store, err = sqlite.Open(ctx, sc.SQLite) // makes the file's directory
			t.kind = "sqlite"
		} else {
			store, err = postgres.Open(ctx, sc.Postgres.Value())
			t.kind = "postgres"
		}
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if t.kind == "" && store != nil {
		t.kind = "given"
	}
	if sc := cfg.Store; sc != nil && sc.Refresh > 0 {
		t.refresh = sc.Refresh.D()
	}
	t.retention = cfg.Store.RetentionAge()
	t.auditRetention = cfg.Store.AuditRetentionAge()
	t.bodyRetention = cfg.Store.BodyRetentionAge()
	t.store = store
	clk := g.opts.Clock
	if store != nil {
		t.dir = tenant.NewDirectory(clk, store)
		t.spend = tenant.NewSpend(clk, store)
		t.spend.SetPeriods(t.dir.Periods) // how far back budgets read spend
		t.spend.SetPoolBudgets(t.dir.PoolBudgets)
		t.health.set = g.Metrics.StoreUp
		wo := ledger.WriterOptions{
			Clock:     clk,
			Secrets:   func() []string { return g.secretValues(t) }, // bodyretention.go
			OnWritten: func(b []ledger.Usage) { t.spend.Written(b); t.health.wrote(true) },
			OnDrop:    g.usageDropped,
			OnError: func(err error) {
				t.health.wrote(false)
				g.Metrics.StoreError("write")
				g.Logger.Warn("usage store: write failed; the records wait in the buffer", "error", err)
			},
			OnSpoolError: func(err error) {
				g.Metrics.StoreError("spool")
				g.Logger.Warn("usage spool: write failed; the record waits in memory only", "error", err)
			},
		}
		if cfg.Store != nil {
			wo.Buffer = cfg.Store.Buffer
		}
		if err := g.openSpool(cfg.Store, &wo); err != nil {
			if g.opts.Ledger == nil {
				store.Close()
			}
			return err
		}
		var err error
		if t.audit, err = g.startAudit(store, cfg.Store); err != nil {
			if wo.Spool != nil {
				wo.Spool.Close()
			}
			if g.opts.Ledger == nil {
				store.Close()
			}
			return err
		}
		t.writer = ledger.NewWriter(store, wo)
		// The first read of keys and spend, before any request: a store
		// that does not answer now is not fatal (known keys come later).
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		g.refreshTenancy(rctx, t)
		cancel()
	} else {
		t.dir = tenant.NewDirectory(clk, nil)
		t.spend = tenant.NewSpend(clk, nil)
		t.spend.SetPeriods(t.dir.Periods)
	}
	t.spend.SetMembers(t.dir.Members) // an org's spend is its teams'
	t.lim = tenant.NewLimiter(clk, t.spend, t.dir.Team)
	t.lim.Orgs = t.dir.Org
	t.lim.OnBudget = g.budgetAlert
	t.lim.Price = g.price // budgets price a request at its pool's top member
	g.shareBudgets(t.lim)
	if store != nil {
		t.lim.EndUsers.Load = endUserSpend(store)
	}
	if t.lim.EndUsers != nil {
		g.Metrics.EndUsers(t.lim.EndUsers) // switchover_end_users
	}
	g.ten = t
	return nil
}

var _ metrics.EndUserSource = (*tenant.EndUsers)(nil)

// configureTenancy gives the directory the configuration's keys and teams.
func (g *Gateway) configureTenancy(cfg *config.Config) {
	keys := make([]tenant.ConfigKey, 0, len(cfg.Keys))
	for _, k := range cfg.Keys {
		keys = append(keys, tenant.ConfigKey{Secret: k.Key.Value(), Principal: tenant.Principal{
			ID: k.Name, Name: k.Name, Team: k.Team, Pools: k.Pools, Models: k.Models, Tags: k.Tags,
			Limits: limitsOf(k.Limits), PoolBudgets: poolBudgetsOf(cfg, k), Patience: k.Patience.D(),
			Cache: k.Cache.Policy().Effective(),
		}})
	}
	teams := make([]tenant.Team, 0, len(cfg.Teams))
	for _, t := range cfg.Teams {
		teams = append(teams, tenant.Team{Name: t.Name, Limits: limitsOf(t.Limits), ShareObjects: t.ShareObjects, Org: t.Org})
	}
	orgs := make([]tenant.Org, 0, len(cfg.Orgs))
	for _, o := range cfg.Orgs {
		orgs = append(orgs, tenant.Org{Name: o.Name, Limits: limitsOf(o.Limits)})
	}
	g.ten.dir.SetOrgs(orgs)
	g.ten.dir.SetConfig(keys, teams)
	select { // read spend again, as far back as the file's budget periods need
	case g.ten.kick <- struct{}{}:
	default:
	}
}

// poolBudgetsOf returns k's budgets of one pool, their pools resolved.
func poolBudgetsOf(cfg *config.Config, k config.Key) []tenant.PoolBudget {
	var out []tenant.PoolBudget
	for _, b := range k.Budgets {
		out = append(out, tenant.PoolBudget{Pool: b.PoolIn(cfg), Budget: b.Budget.USD, Period: b.Budget.Period})
	}
	return out
}

func limitsOf(l config.Limits) tenant.Limits {
	e := l.EndUserLimits
	return tenant.Limits{RPM: int64(l.RPM), TPM: int64(l.TPM), MaxConcurrent: l.MaxConcurrent,
		Budget: l.Budget.USD, BudgetPeriod: l.Budget.Period, SoftBudget: float64(l.SoftBudget),
		EndUser: tenant.EndUserLimits{RPM: int64(e.RPM), TPM: int64(e.TPM), Budget: e.Budget.USD, BudgetPeriod: e.Budget.Period}}
}

// refreshTenancy reads keys and spend back from the store.
func (g *Gateway) refreshTenancy(ctx context.Context, t *tenancy) {
	err := errors.Join(t.dir.Refresh(ctx), t.spend.Refresh(ctx))
	t.health.read(err == nil)
	if err != nil {
		g.Metrics.StoreError("refresh")
		g.Logger.Warn("key store: refresh failed; known keys keep working, spend of other replicas is late", "error", err)
	}
}

// KeysChanged reads the store's keys again at once, after the admin API
// changed one, so that a revocation holds on this replica from its answer
// on (and on the others within store.refresh).
func (g *Gateway) KeysChanged() {
	if g.ten == nil || g.ten.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(g.life.bg, 5*time.Second)
	defer cancel()
	if err := g.ten.dir.Refresh(ctx); err != nil {
		g.Logger.Warn("key store: refresh after a change failed", "error", err)
		select {
		case g.ten.kick <- struct{}{}:
		default:
		}
	}
}

// runTenancy starts the background work: refreshing keys and spend, and
// exchanging rate-limit use with the fleet.
func (g *Gateway) runTenancy() {
	t := g.ten
	t.done = make(chan struct{})
	g.runRetention(t)
	g.runBodyRetention(t) // bodyretention.go
	go func() {
		defer close(t.done)
		refresh := time.NewTicker(t.refresh)
		defer refresh.Stop()
		var sync <-chan time.Time
		if g.fleet != nil {
			tk := time.NewTicker(limitsSync)
			defer tk.Stop()
			sync = tk.C
		}
		ex := &limitsExchange{g: g}
		for {
			select {
			case <-g.life.bg.Done():
				return
			case <-refresh.C:
			case <-t.kick:
			case <-sync:
				ctx, cancel := context.WithTimeout(g.life.bg, time.Second)
				t.lim.Sync(ctx, ex)
				cancel()
				continue
			case <-t.lim.EndUsers.Kick():
				g.refreshEndUsers(t)
				continue
			}
			g.refreshEndUsers(t)
			if t.store == nil {
				t.spend.Refresh(g.life.bg) // prunes old days
				continue
			}
			ctx, cancel := context.WithTimeout(g.life.bg, 10*time.Second)
			g.refreshTenancy(ctx, t)
			cancel()
		}
	}()
}

// endUserSpend reads an end user's spend from store, for its budget.
func endUserSpend(store ledger.Store) tenant.EndUserLoad {
	return func(ctx context.Context, key, team, user string, since time.Time) (float64, error) {
		rows, err := store.Spend(ctx, ledger.SpendQuery{From: since, To: since.AddDate(1, 0, 0), Key: key, Team: team, EndUser: user})
		if err != nil || len(rows) == 0 {
			return 0, err
		}
		return rows[0].Cost, nil
	}
}

// refreshEndUsers reads from the store the spend of the end users whose
// budgets need it, and forgets those long idle.
func (g *Gateway) refreshEndUsers(t *tenancy) {
	ctx, cancel := context.WithTimeout(g.life.bg, 10*time.Second)
	defer cancel()
	if err := t.lim.EndUsers.Refresh(ctx); err != nil {
		g.Metrics.StoreError("refresh")
		g.Logger.Warn("usage store: reading end users' spend failed; their budgets count this replica's spend only until it works", "error", err)
	}
}

// stopTenancy writes out the buffered usage (within ctx) and closes the
// store.
func (g *Gateway) stopTenancy(ctx context.Context) error {
	t := g.ten
	if t == nil {
		return nil
	}
	if t.done != nil {
		<-t.done
	}
	if t.retained != nil {
		<-t.retained
	}
	if t.bodiesRetained != nil {
		<-t.bodiesRetained
	}
	var errs []error
	if t.audit != nil {
		if err := t.audit.Close(ctx); errors.Is(err, ledger.ErrSpooled) {
			g.Logger.Warn("audit trail: shutdown grace over with entries unwritten; they wait in the audit spool for the next start", "error", err)
		} else if err != nil {
			g.Logger.Error("audit trail: shutdown grace over with entries unwritten; they are lost (counted in switchover_store_errors_total{op=\"audit\"})", "error", err)
		}
	}
	if t.writer != nil {
		if err := t.writer.Close(ctx); errors.Is(err, ledger.ErrSpooled) {
			g.Logger.Warn("usage store: shutdown grace over with records unwritten; they wait in the spool for the next start", "error", err)
		} else if err != nil {
			g.Logger.Error("usage store: shutdown grace over with records unwritten; they are lost (counted in switchover_usage_dropped_total)", "error", err)
			errs = append(errs, fmt.Errorf("usage store: %w", err))
		}
	}
	if t.store != nil && g.opts.Ledger == nil {
		errs = append(errs, t.store.Close())
	}
	return errors.Join(errs...)
}

// Ledger returns the store of keys, teams and usage, or nil when none is
// configured.
func (g *Gateway) Ledger() ledger.Store {
	if g.ten == nil {
		return nil
	}
	return g.ten.store
}

// record stores an answered request's usage (off the request path).
func (g *Gateway) record(s proxy.Spend, cost float64) { g.recordSaved(s, cost, 0) }

// recordSaved is record with what a cache hit saved (saved, in USD).
func (g *Gateway) recordSaved(s proxy.Spend, cost, saved float64) {
	t := g.ten
	if t == nil || t.writer == nil {
		return
	}
	region := ""
	if st := g.state.Load(); st != nil {
		region = st.BackendConfigs[s.Backend].Region
	}
	model := s.Usage.Model
	if model == "" {
		model = s.Model
	}
	t.writer.Add(ledger.Usage{
		RequestID: s.RequestID, KeyID: s.Key, Team: s.Team, Tags: s.Tags, Pool: s.Pool, Backend: s.Backend, Region: region, Model: model,
		PromptTokens: s.Usage.Prompt, CompletionTokens: s.Usage.Completion, CachedTokens: s.Usage.Cached,
		ReasoningTokens: s.Usage.Reasoning, Cost: cost, Status: s.Status, Failover: s.Failover,
		Estimated: s.Usage.Estimated, EndUser: s.EndUser, Cache: s.Cache, Saved: saved,
		Attempts: loggedAttempts(s.Attempts), Tried: len(s.Attempts), Hedge: s.Hedge,
		DurationMs: s.Duration.Milliseconds(), FirstByteMs: s.FirstByte.Milliseconds(), Unanswered: s.Unanswered,
		Bodies: (*ledger.Bodies)(s.Bodies), // redacted by the store as it writes them
	})
}

// loggedAttempts are the engine's attempts as the request log keeps
// them (the first ledger.MaxAttempts), their starts counted from the
// first's.
func loggedAttempts(as []route.Attempt) []ledger.Attempt {
	if len(as) == 0 {
		return nil
	}
	var first time.Time
	for _, a := range as {
		if !a.Start.IsZero() && (first.IsZero() || a.Start.Before(first)) {
			first = a.Start
		}
	}
	out := make([]ledger.Attempt, 0, min(len(as), ledger.MaxAttempts))
	for _, a := range as[:min(len(as), ledger.MaxAttempts)] {
		var start int64
		if !a.Start.IsZero() {
			start = a.Start.Sub(first).Milliseconds()
		}
		reason := string(a.Reason)
		if a.Reason == route.ReasonOK {
			reason = "ok" // passed on to the client
		}
		out = append(out, ledger.Attempt{Backend: a.Backend, Status: a.Status, Reason: reason, StartMs: start,
			DurationMs: a.Duration.Milliseconds(), Hedge: a.Hedge, Abandoned: a.Abandoned})
	}
	return out
}

// budgetAlert notifies a budget reaching 80% (or its soft budget) or
// 100%: once per fleet when replicas share state (the first to take the
// alert's lease sends it).
func (g *Gateway) budgetAlert(a tenant.BudgetAlert) {
	thr := strconv.FormatFloat(a.Threshold, 'f', -1, 64)
	// The period's start to the second: periods of hours start several
	// times a day.
	key := fmt.Sprintf("budget/%s/%s/%s/%s/%s", a.Subject, a.Name, a.Scope, a.PeriodStart.UTC().Format(time.RFC3339), thr)
	ttl := ledger.PeriodEnd(a.Period, a.PeriodStart).Sub(g.now()) + 24*time.Hour // held while the period lasts
	if !g.fleet.leaseOnce(g.life.bg, key, ttl) {
		return // another replica sent it
	}
	label := thr
	if a.Soft {
		label = "soft" // soft budgets' shares vary: one label for them all
	}
	g.Metrics.BudgetAlert(a.Subject, label)
	who := a.Subject + " " + a.Name
	if a.Label != "" && a.Label != a.Name {
		who += " (" + a.Label + ")"
	}
	if a.Scope != "" {
		who += " on " + a.Scope
	}
	state := fmt.Sprintf("has spent %.0f%% of its budget", 100*a.Spent/a.Budget)
	switch {
	case a.Soft:
		state = fmt.Sprintf("has reached its soft budget of $%s (%.0f%% of its budget; nothing is refused until the budget)",
			strconv.FormatFloat(a.SoftBudget, 'f', -1, 64), 100*a.Spent/a.Budget)
	case a.Threshold >= 1 && a.Spent >= a.Budget:
		state = "has spent its whole budget; its requests are refused with 429 budget_exceeded until the period ends"
	case a.Threshold >= 1:
		state = fmt.Sprintf("has spent %.0f%% of its budget, and requests that may cost more than the rest are refused with 429 budget_exceeded until the period ends", 100*a.Spent/a.Budget)
	}
	now := g.now()
	since := a.PeriodStart.UTC().Format(time.DateOnly)
	if !a.PeriodStart.Equal(a.PeriodStart.Truncate(24 * time.Hour)) {
		since = a.PeriodStart.UTC().Format(time.RFC3339)
	}
	detail := fmt.Sprintf("%s %s: $%.2f of $%s per %s since %s", who, state, a.Spent, strconv.FormatFloat(a.Budget, 'f', -1, 64), a.Period, since)
	g.Logger.Warn("budget", "subject", a.Subject, "name", a.Name, "threshold", a.Threshold, "spent_usd", a.Spent, "budget_usd", a.Budget, "period", a.Period)
	g.addEvent(Event{At: now, Kind: "budget", Detail: detail}, true)
	if g.notes.tracker != nil {
		g.notes.tracker.Send(notify.Notification{Kind: notify.KindBudget, Reason: detail, At: now,
			Text:    fmt.Sprintf("switchover: %s (%s).", detail, now.UTC().Format(time.RFC3339)),
			Details: budgetDetails(a, thr)})
	}
}

// requestLogOf is a configuration key's request_log as the admin API
// shows a key's (nil for none).
func requestLogOf(l *config.RequestLog) *ledger.KeyRequestLog {
	if l == nil {
		return nil
	}
	return &ledger.KeyRequestLog{Bodies: l.Bodies, MaxBodyBytes: int64(l.MaxBodyBytes)}
}

// scopedOf is bs as the ledger keeps them.
func scopedOf(bs []tenant.PoolBudget) []ledger.ScopedBudget {
	var out []ledger.ScopedBudget
	for _, b := range bs {
		out = append(out, ledger.ScopedBudget{Pool: b.Pool, Budget: b.Budget, Period: b.Period})
	}
	return out
}

// budgetDetails are the details of a budget notification.
func budgetDetails(a tenant.BudgetAlert, thr string) map[string]string {
	d := map[string]string{"subject": a.Subject, "name": a.Name, "threshold": thr, "spent_usd": strconv.FormatFloat(a.Spent, 'f', 4, 64), "budget_usd": strconv.FormatFloat(a.Budget, 'f', -1, 64), "period": a.Period}
	if a.Soft {
		d["soft_budget_usd"] = strconv.FormatFloat(a.SoftBudget, 'f', -1, 64)
	}
	if a.Scope != "" {
		d["scope"] = a.Scope
	}
	return d
}

// limitsExchange shares rate-limit use through the fleet's store: each
// replica puts its totals under its own key, and lists the others'.
type limitsExchange struct{ g *Gateway }

const limitsKey = "limits/"

func (e *limitsExchange) Swap(ctx context.Context, mine map[string]tenant.Taken) (map[string]map[string]tenant.Taken, error) {
	ex := tenant.StoreExchange{Store: e.g.fleet.store, ID: e.g.fleet.ID(), Prefix: limitsKey, TTL: 10*limitsSync + 5*time.Second}
	return ex.Swap(ctx, mine)
}

// keysAPI is the admin API's routes for keys, teams and usage.
func (g *Gateway) keysAPI() *ledgerapi.Handler {
	return &ledgerapi.Handler{
		Store:    g.Ledger(),
		Now:      g.now,
		OnChange: g.KeysChanged,
		OnAction: g.keyAction,
		Actor:    g.actor,
		Logger:   g.Logger,
		Pools: func() []string {
			var names []string
			for _, p := range g.Config().Pools {
				names = append(names, p.Name)
			}
			return names
		},
		Models: func() []string {
			var names []string
			for _, p := range g.Config().Pools {
				names = append(append(names, p.Name), p.Aliases...)
			}
			return names
		},
		Static: func() []ledger.Key {
			var keys []ledger.Key
			for _, k := range g.Config().Keys {
				l := limitsOf(k.Limits)
				keys = append(keys, ledger.Key{ID: k.Name, Name: k.Name, Team: k.Team, Pools: k.Pools, Models: k.Models,
					Tags: k.Tags, Metadata: k.Metadata, RPM: l.RPM, TPM: l.TPM, MaxConcurrent: l.MaxConcurrent, Budget: l.Budget, BudgetPeriod: l.BudgetPeriod, SoftBudget: l.SoftBudget,
					Budgets: scopedOf(poolBudgetsOf(g.Config(), k)), Cache: k.Cache.Policy(), RequestLog: requestLogOf(k.RequestLog)})
			}
			return keys
		},
		StaticTeams: func() []ledger.Team {
			var teams []ledger.Team
			for _, t := range g.Config().Teams {
				l := limitsOf(t.Limits)
				teams = append(teams, ledger.Team{Name: t.Name, RPM: l.RPM, TPM: l.TPM, Budget: l.Budget, BudgetPeriod: l.BudgetPeriod, SoftBudget: l.SoftBudget})
			}
			return teams
		},
	}
}

// keyAction records a change of a key or team made through the admin API
// in the events, with who made it, and the admin actions' metric (the
// handler logs it). No notification: keys change as a matter of course.
func (g *Gateway) keyAction(action, what, who string) {
	g.Metrics.Admin(action)
	verb := map[string]string{"key:create": "created", "key:update": "changed", "key:rotate": "rotated", "key:revoke": "revoked", "team:put": "set"}[action]
	detail := verb + " " + what
	g.audit(who, "admin:"+action, what, detail)
	if who != "" {
		detail += " (by " + who + ")"
	}
	g.addEvent(Event{At: g.now(), Kind: "admin:" + action, Detail: detail}, true)
}
