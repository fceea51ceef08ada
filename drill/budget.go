package drill

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// recordWait bounds the wait for the store to hold every admitted
// request's record (usage is written in batches, every second).
const recordWait = 30 * time.Second

// budgetRun is one key with a budget on replicas sharing a store.
type budgetRun struct {
	d        *drill
	store    string
	replicas []*replica
	key      ledger.Key
	secret   string
}

// The budgets a run can hold a key to, besides its own (""): its team's,
// its team's organisation's, its budget of the drill's pool (a key of the
// configuration file: store keys have none), and its end user's (a team's
// end_user_limits; the callers name one end user).
const (
	ofTeam    = "team"
	ofOrg     = "org"
	ofPool    = "pool"
	ofEndUser = "end user"
)

// drillEndUser is the end user the callers of an ofEndUser run name.
const drillEndUser = "drill-end-user"

// startBudgetRun starts n replicas on store ("sqlite", "postgres" or
// "postgres+redis") and makes a key with the drill's budget or, with of
// (ofTeam…), a key held to that budget instead.
func (d *drill) startBudgetRun(ctx context.Context, scenario, store string, n int, of string) (*budgetRun, error) {
	d.seq++
	run := &budgetRun{d: d, store: store}
	s := setup{}
	k := ledger.Key{Budget: d.o.Budget, BudgetPeriod: "day"}
	uniq := fmt.Sprintf("%d-%d", time.Now().UnixNano(), d.seq)
	fileKey := ""
	switch of {
	case ofTeam, ofOrg, ofEndUser:
		k.Team = "drill-team-" + uniq
		k.Budget, k.BudgetPeriod = 0, ""
	}
	switch of {
	case ofTeam:
		s.keys = fmt.Sprintf("teams:\n  - {name: %s, budget: %v/day}\n", k.Team, d.o.Budget)
	case ofOrg:
		s.keys = fmt.Sprintf("orgs:\n  - {name: drill-org-%s, budget: %v/day}\nteams:\n  - {name: %s, org: drill-org-%s}\n", uniq, d.o.Budget, k.Team, uniq)
	case ofEndUser:
		s.keys = fmt.Sprintf("teams:\n  - {name: %s, end_user_limits: {budget: %v/day}}\n", k.Team, d.o.Budget)
	case ofPool:
		fileKey = "drill-pool-key-" + uniq
		s.keys = fmt.Sprintf("keys:\n  - name: %s\n    key: %s-secret-0123456789abcdef\n    budgets: [{pool: %s, budget: %v/day}]\n", fileKey, fileKey, pool, d.o.Budget)
	}
	switch store {
	case "sqlite":
		s.sqlite = d.sqliteFile()
	case "postgres":
		s.postgres = d.o.Postgres
	case "postgres+redis":
		s.postgres, s.redis = d.o.Postgres, d.o.Redis.URL()
		s.prefix = fmt.Sprintf("drill-%d-%d:", time.Now().UnixNano(), d.seq)
	}
	for i := range n {
		s.name = fmt.Sprintf("gw-%c", 'a'+i)
		r, err := d.b.startReplica(s)
		if err != nil {
			run.stop()
			return nil, err
		}
		run.replicas = append(run.replicas, r)
	}
	if fileKey != "" {
		run.key, run.secret = ledger.Key{ID: fileKey, Name: fileKey}, fileKey+"-secret-0123456789abcdef"
		return run, nil
	}
	st := run.replicas[0].gw.Ledger()
	k.Name = fmt.Sprintf("drill-%s-%s-%d-%d", scenario, store, n, time.Now().UnixNano())
	k, secret, err := ledger.NewKey(ctx, st, k, time.Now())
	if err != nil {
		run.stop()
		return nil, fmt.Errorf("make the key: %w", err)
	}
	run.key, run.secret = k, secret
	return run, nil
}

func (r *budgetRun) stop() {
	for _, rep := range r.replicas {
		rep.stop()
	}
}

// row waits for the store to hold admitted requests of the key and
// returns the run's row.
func (r *budgetRun) row(ctx context.Context, scenario, sent string, callers int, t tally) BudgetRow {
	row := BudgetRow{Scenario: scenario, Store: r.store, Replicas: len(r.replicas), Callers: callers, Sent: sent,
		Admitted: t.admitted, Refused: t.budget, Errors: t.failed + t.rate, Budget: r.d.o.Budget}
	st := r.replicas[0].gw.Ledger()
	day := time.Now().UTC().Truncate(24 * time.Hour)
	q := ledger.SpendQuery{From: day.AddDate(0, 0, -1), To: day.AddDate(0, 0, 2), Key: r.key.ID}
	deadline := time.Now().Add(recordWait)
	for {
		rows, err := st.Spend(ctx, q)
		if err == nil && len(rows) == 1 {
			row.Spent = rows[0].Cost
			if rows[0].Requests >= int64(t.admitted) {
				row.Recorded = true
				return row
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return row
		}
		time.Sleep(100 * time.Millisecond) // the usage writer flushes every second
	}
}

// burst is issue 24's item 1 on each store: 3 small requests, then
// Burst large ones at once, of LargeChars characters (each alone over the
// budget at the defaults) and of a quarter of that (a few fit), the
// latter on a key's budget and on its team's.
func (d *drill) burst(ctx context.Context) error {
	for _, store := range d.stores(Burst, false) {
		runs := []struct {
			chars int
			team  bool
		}{{d.o.LargeChars, false}, {d.o.LargeChars / 4, false}, {d.o.LargeChars / 4, true}}
		for _, r := range runs {
			if err := d.burstRun(ctx, store, r.chars, r.team); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *drill) burstRun(ctx context.Context, store string, chars int, team bool) error {
	scenario := Burst
	if team {
		scenario += " (team)"
	}
	d.o.progress("%s on %s: 3 small, then %d of %d characters at once", scenario, store, d.o.Burst, chars)
	of := ""
	if team {
		of = ofTeam
	}
	run, err := d.startBudgetRun(ctx, Burst, store, 1, of)
	if err != nil {
		return err
	}
	defer run.stop()
	url := run.replicas[0].url
	var t tally
	for range 3 {
		t.add(send(ctx, url, run.secret, smallBody))
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	large := largeBody(chars)
	for range d.o.Burst {
		wg.Go(func() {
			<-start
			o, ra := send(ctx, url, run.secret, large)
			mu.Lock()
			t.add(o, ra)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	sent := fmt.Sprintf("3 small + %d×%d chars", d.o.Burst, chars)
	d.rep.Budget = append(d.rep.Budget, run.row(ctx, scenario, sent, d.o.Burst, t))
	return nil
}

// even is item 1's even traffic: Callers callers send small requests
// until refused, on each store.
func (d *drill) even(ctx context.Context) error {
	for _, store := range d.stores(Even, false) {
		if err := d.callersRun(ctx, Even, store, 1, ""); err != nil {
			return err
		}
	}
	return nil
}

// replicas is item 3: two and three replicas sharing a key's budget, and
// three sharing an organisation's, a key's budget of its pool and an end
// user's, on PostgreSQL without and with state.redis.
func (d *drill) replicas(ctx context.Context) error {
	for _, store := range d.stores(Replicas, true) {
		for _, n := range []int{2, 3} {
			if err := d.callersRun(ctx, Replicas, store, n, ""); err != nil {
				return err
			}
		}
		for _, of := range []string{ofOrg, ofPool, ofEndUser} {
			if err := d.callersRun(ctx, Replicas+" ("+of+")", store, 3, of); err != nil {
				return err
			}
		}
	}
	return nil
}

// stores are the stores a scenario runs on: SQLite (unless fleet) and
// those of PostgreSQL and Redis the options give.
func (d *drill) stores(scenario string, fleet bool) []string {
	var out []string
	if !fleet {
		out = append(out, "sqlite")
	}
	if d.o.Postgres == "" {
		d.skip("%s on PostgreSQL: no PostgreSQL DSN given", scenario)
		return out
	}
	out = append(out, "postgres")
	if fleet {
		if d.o.Redis == nil {
			d.skip("%s on PostgreSQL with state.redis: no Redis given", scenario)
		} else {
			out = append(out, "postgres+redis")
		}
	}
	return out
}

// callersRun starts n replicas on store, a key held to the budget of
// (see startBudgetRun), and on each replica Callers callers
// that send small requests until the budget refuses them, MaxRequests
// have been sent or RunTimeout has passed.
func (d *drill) callersRun(ctx context.Context, scenario, store string, n int, of string) error {
	d.o.progress("%s on %s: %d replica(s), %d callers each, small requests until refused", scenario, store, n, d.o.Callers)
	run, err := d.startBudgetRun(ctx, scenario, store, n, of)
	if err != nil {
		return err
	}
	defer run.stop()
	sendCtx, cancel := context.WithTimeout(ctx, d.o.RunTimeout)
	defer cancel()
	body := smallBody
	if of == ofEndUser {
		body = smallBodyOf(drillEndUser)
	}
	var total atomic.Int64
	var mu sync.Mutex
	var t tally
	var wg sync.WaitGroup
	for _, rep := range run.replicas {
		for range d.o.Callers {
			wg.Go(func() {
				for sendCtx.Err() == nil && total.Add(1) <= int64(d.o.MaxRequests) {
					o, ra := send(sendCtx, rep.url, run.secret, body)
					if sendCtx.Err() != nil {
						return // cut by the bound: not counted
					}
					mu.Lock()
					t.add(o, ra)
					mu.Unlock()
					if o == overBudget {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if errors.Is(sendCtx.Err(), context.DeadlineExceeded) {
		d.o.progress("%s on %s: stopped by the %v bound", scenario, store, d.o.RunTimeout)
	}
	sent := "small until refused"
	d.rep.Budget = append(d.rep.Budget, run.row(ctx, scenario, sent, n*d.o.Callers, t))
	return nil
}
