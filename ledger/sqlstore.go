package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/internal/labels"
)

// sqlStore is the Store over database/sql shared by SQLite and
// PostgreSQL. Reads go to r and writes to w, which are the same pool for
// PostgreSQL and two pools for SQLite (one connection writes, several
// read).
type sqlStore struct {
	r, w *sql.DB
	d    Dialect
}

var _ Store = (*sqlStore)(nil)

// NewSQLStore returns the Store over database/sql in dialect d: reads go
// through r and writes through w, which may be the same pool. The
// database must be migrated already (see Migrate); the driver packages
// ledger/sqlite and ledger/postgres do both. The Store owns the pools:
// its Close closes w, and r too when it is another pool. The Store is
// safe for concurrent use.
func NewSQLStore(r, w *sql.DB, d Dialect) Store {
	return &sqlStore{r: r, w: w, d: d}
}

const keyColumns = `id, name, team, prefix, hash, pools, models, rpm, tpm, max_concurrent,
	budget_nusd, budget_period, expires_us, created_us, revoked_us, patience_ms,
	prev_prefix, prev_hash, prev_until_us, tags, metadata, cache, request_log`

func (s *sqlStore) q(query string) string { return s.d.bind(query) }

func (s *sqlStore) CreateKey(ctx context.Context, k Key) error {
	if err := validKey(k); err != nil {
		return err
	}
	if err := validBudgets(k.Budget, k.SoftBudget, k.Budgets); err != nil {
		return err
	}
	if k.ID == "" || k.Prefix == "" || len(k.Hash) == 0 {
		return fmt.Errorf("%w: a key needs an ID, prefix and hash (use NewKey)", ErrInvalid)
	}
	err := s.withRules(ctx, keyOwner(k.ID), k.SoftBudget, k.Budgets, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO api_keys (`+keyColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			k.ID, k.Name, k.Team, k.Prefix, k.Hash, jsonList(k.Pools), jsonList(k.Models),
			k.RPM, k.TPM, int64(k.MaxConcurrent), toNano(k.Budget), k.BudgetPeriod,
			micros(k.Expires), micros(k.Created), micros(k.Revoked), k.Patience.Milliseconds(),
			k.PrevPrefix, nonNil(k.PrevHash), micros(k.PrevUntil), jsonList(k.Tags), jsonMap(k.Metadata), cacheText(k.Cache), requestLogText(k.RequestLog))
		return err
	})
	if err != nil && s.d.IsUnique(err) {
		return fmt.Errorf("%w: %s: %v", ErrConflict, k.ID, err)
	}
	if err != nil {
		return fmt.Errorf("ledger: create key: %w", err)
	}
	return nil
}

func (s *sqlStore) KeyByPrefix(ctx context.Context, prefix string) (Key, error) {
	row := s.r.QueryRowContext(ctx, s.q(`SELECT `+keyColumns+` FROM api_keys WHERE prefix = ? OR prev_prefix = ?
		ORDER BY prefix = ? DESC LIMIT 1`), prefix, prefix, prefix)
	k, err := scanKey(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, fmt.Errorf("%w: prefix %s", ErrNotFound, prefix)
	}
	if err != nil {
		return Key{}, fmt.Errorf("ledger: key by prefix: %w", err)
	}
	r, err := s.readRules(ctx, keyOwner(k.ID))
	if err != nil {
		return Key{}, fmt.Errorf("ledger: key by prefix: %w", err)
	}
	r.attach(&k)
	return k, nil
}

func (s *sqlStore) Keys(ctx context.Context) ([]Key, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY created_us, id`)
	if err != nil {
		return nil, fmt.Errorf("ledger: keys: %w", err)
	}
	defer rows.Close()
	var ks []Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger: keys: %w", err)
		}
		ks = append(ks, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: keys: %w", err)
	}
	rows.Close()
	r, err := s.readRules(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("ledger: keys: %w", err)
	}
	for i := range ks {
		r.attach(&ks[i])
	}
	return ks, nil
}

func (s *sqlStore) UpdateKey(ctx context.Context, k Key) error {
	if err := validKey(k); err != nil {
		return err
	}
	if err := validBudgets(k.Budget, k.SoftBudget, k.Budgets); err != nil {
		return err
	}
	err := s.withRules(ctx, keyOwner(k.ID), k.SoftBudget, k.Budgets, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE api_keys SET name = ?, team = ?, pools = ?, models = ?,
		rpm = ?, tpm = ?, max_concurrent = ?, budget_nusd = ?, budget_period = ?, expires_us = ?, patience_ms = ?,
		tags = ?, metadata = ?, cache = ?, request_log = ? WHERE id = ?`),
			k.Name, k.Team, jsonList(k.Pools), jsonList(k.Models), k.RPM, k.TPM, int64(k.MaxConcurrent),
			toNano(k.Budget), k.BudgetPeriod, micros(k.Expires), k.Patience.Milliseconds(),
			jsonList(k.Tags), jsonMap(k.Metadata), cacheText(k.Cache), requestLogText(k.RequestLog), k.ID)
		if err != nil {
			return err
		}
		return oneRow(res, nil, "update key", k.ID) // no rules for a key that is not there
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("ledger: update key %s: %w", k.ID, err)
	}
	return err
}

func (s *sqlStore) RotateKey(ctx context.Context, id, prefix string, hash []byte, prevUntil time.Time) error {
	query := `UPDATE api_keys SET prev_prefix = '', prev_hash = ?, prev_until_us = 0, prefix = ?, hash = ? WHERE id = ?`
	args := []any{[]byte{}, prefix, hash, id}
	if !prevUntil.IsZero() {
		// The right-hand sides read the row as it was: the old secret.
		query = `UPDATE api_keys SET prev_prefix = prefix, prev_hash = hash, prev_until_us = ?, prefix = ?, hash = ? WHERE id = ?`
		args[0] = micros(prevUntil)
	}
	res, err := s.w.ExecContext(ctx, s.q(query), args...)
	if err != nil && s.d.IsUnique(err) {
		return fmt.Errorf("%w: prefix of %s: %v", ErrConflict, id, err)
	}
	return oneRow(res, err, "rotate key", id)
}

func (s *sqlStore) RevokeKey(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("%w: revoke %s at the zero time", ErrInvalid, id)
	}
	res, err := s.w.ExecContext(ctx, s.q(`UPDATE api_keys
		SET revoked_us = CASE WHEN revoked_us = 0 THEN ? ELSE revoked_us END WHERE id = ?`), micros(at), id)
	return oneRow(res, err, "revoke key", id)
}

func oneRow(res sql.Result, err error, what, id string) error {
	if err != nil {
		return fmt.Errorf("ledger: %s %s: %w", what, id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("ledger: %s %s: %w", what, id, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return nil
}

func (s *sqlStore) PutTeam(ctx context.Context, t Team) error {
	if t.Name == "" {
		return fmt.Errorf("%w: a team needs a name", ErrInvalid)
	}
	if err := validPeriod(t.BudgetPeriod); err != nil {
		return err
	}
	if err := validBudgets(t.Budget, t.SoftBudget, nil); err != nil {
		return err
	}
	err := s.withRules(ctx, teamOwner(t.Name), t.SoftBudget, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO teams (name, rpm, tpm, budget_nusd, budget_period)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET rpm = excluded.rpm, tpm = excluded.tpm,
			budget_nusd = excluded.budget_nusd, budget_period = excluded.budget_period`),
			t.Name, t.RPM, t.TPM, toNano(t.Budget), t.BudgetPeriod)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: put team %s: %w", t.Name, err)
	}
	return nil
}

func (s *sqlStore) Teams(ctx context.Context) ([]Team, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, rpm, tpm, budget_nusd, budget_period FROM teams ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("ledger: teams: %w", err)
	}
	defer rows.Close()
	var ts []Team
	for rows.Next() {
		var t Team
		var budget int64
		if err := rows.Scan(&t.Name, &t.RPM, &t.TPM, &budget, &t.BudgetPeriod); err != nil {
			return nil, fmt.Errorf("ledger: teams: %w", err)
		}
		t.Budget = fromNano(budget)
		ts = append(ts, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: teams: %w", err)
	}
	rows.Close()
	r, err := s.readRules(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("ledger: teams: %w", err)
	}
	for i := range ts {
		ts[i].SoftBudget = r.soft[teamOwner(ts[i].Name)]
	}
	return ts, nil
}

// dailyKey is a row of usage_daily, or of usage_daily_tags with its tag.
type dailyKey struct{ day, tag, key, team, pool, backend, model string }

type sums struct {
	requests, failovers                        int64
	prompt, completion, cached, reasoning, nus int64
}

func (sm *sums) add(u Usage, nus int64) {
	sm.requests++
	sm.failovers += boolInt(u.Failover)
	sm.prompt += u.PromptTokens
	sm.completion += u.CompletionTokens
	sm.cached += u.CachedTokens
	sm.reasoning += u.ReasoningTokens
	sm.nus += nus
}

// dailySums are the sums a batch adds to usage_daily and, per tag, to
// usage_daily_tags.
type dailySums struct{ all, tagged map[dailyKey]*sums }

func (d dailySums) add(u Usage, tags []string, nus int64) {
	dk := dailyKey{dayOf(u.At), "", u.KeyID, u.Team, u.Pool, u.Backend, u.Model}
	addTo(d.all, dk, u, nus)
	if len(tags) == 0 {
		addTo(d.tagged, dk, u, nus) // under the tag ''
	}
	for _, t := range tags {
		dk.tag = t
		addTo(d.tagged, dk, u, nus)
	}
}

func addTo(m map[dailyKey]*sums, dk dailyKey, u Usage, nus int64) {
	sm := m[dk]
	if sm == nil {
		sm = &sums{}
		m[dk] = sm
	}
	sm.add(u, nus)
}

func (s *sqlStore) RecordUsage(ctx context.Context, batch []Usage) error {
	if len(batch) == 0 {
		return nil
	}
	for i, u := range batch {
		if u.RequestID == "" {
			return fmt.Errorf("%w: usage record %d of the batch has no RequestID", ErrInvalid, i)
		}
		if u.At.IsZero() {
			return fmt.Errorf("%w: usage record %s has no time", ErrInvalid, u.RequestID)
		}
	}
	// Insert in RequestID order (and daily rows in key order) so that
	// concurrent transactions take row locks in one order and cannot
	// deadlock each other.
	rs := slices.Clone(batch)
	slices.SortStableFunc(rs, func(a, b Usage) int { return cmp.Compare(a.RequestID, b.RequestID) })
	rs = slices.CompactFunc(rs, func(a, b Usage) bool { return a.RequestID == b.RequestID })

	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger: record usage: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	ins, err := tx.PrepareContext(ctx, s.q(`INSERT INTO usage_requests (request_id, at_us, day, key_id, team,
		pool, backend, region, model, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens,
		cost_nusd, status, failover, estimated, tags, end_user, cache, saved_nusd,
		attempts, tried, hedge, duration_ms, first_byte_ms, unanswered)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (request_id) DO NOTHING`))
	if err != nil {
		return fmt.Errorf("ledger: record usage: %w", err)
	}
	defer ins.Close()
	insTag, err := tx.PrepareContext(ctx, s.q(`INSERT INTO usage_tags (request_id, tag, at_us) VALUES (?, ?, ?)
		ON CONFLICT (request_id, tag) DO NOTHING`))
	if err != nil {
		return fmt.Errorf("ledger: record usage: %w", err)
	}
	defer insTag.Close()
	insTried, err := tx.PrepareContext(ctx, s.q(`INSERT INTO usage_attempts (request_id, backend, at_us) VALUES (?, ?, ?)
		ON CONFLICT (request_id, backend) DO NOTHING`))
	if err != nil {
		return fmt.Errorf("ledger: record usage: %w", err)
	}
	defer insTried.Close()
	bodies := bodyInserter{tx: tx, query: s.q(bodiesInsert)} // prepared for the first record with bodies
	defer bodies.close()
	daily := dailySums{all: map[dailyKey]*sums{}, tagged: map[dailyKey]*sums{}}
	traffic := trafficSums{}
	for _, u := range rs {
		nus := toNano(u.Cost)
		tags := uniqueTags(u.Tags)
		res, err := ins.ExecContext(ctx, u.RequestID, u.At.UnixMicro(), dayOf(u.At), u.KeyID, u.Team,
			u.Pool, u.Backend, u.Region, u.Model, u.PromptTokens, u.CompletionTokens, u.CachedTokens,
			u.ReasoningTokens, nus, u.Status, boolInt(u.Failover), boolInt(u.Estimated), jsonList(tags), u.EndUser,
			u.Cache, toNano(u.Saved), attemptsJSON(u.Attempts), max(u.Tried, len(u.Attempts)), bounded(u.Hedge, maxReason),
			u.DurationMs, u.FirstByteMs, boolInt(u.Unanswered))
		if err != nil {
			return fmt.Errorf("ledger: record usage %s: %w", u.RequestID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("ledger: record usage %s: %w", u.RequestID, err)
		} else if n == 0 {
			continue // recorded before
		}
		for _, t := range tags {
			if _, err := insTag.ExecContext(ctx, u.RequestID, t, u.At.UnixMicro()); err != nil {
				return fmt.Errorf("ledger: record usage %s: tags: %w", u.RequestID, err)
			}
		}
		for _, b := range triedBackends(u) {
			if _, err := insTried.ExecContext(ctx, u.RequestID, b, u.At.UnixMicro()); err != nil {
				return fmt.Errorf("ledger: record usage %s: attempts: %w", u.RequestID, err)
			}
		}
		if err := bodies.insert(ctx, u); err != nil {
			return err
		}
		if !u.Unanswered {
			daily.add(u, tags, nus)
		}
		traffic.add(u)
	}
	if err := s.addDaily(ctx, tx, false, daily.all); err != nil {
		return err
	}
	if err := s.addDaily(ctx, tx, true, daily.tagged); err != nil {
		return err
	}
	if err := s.addTraffic(ctx, tx, traffic); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger: record usage: %w", err)
	}
	return nil
}

// uniqueTags returns tags without empty ones and repeats, sorted (the
// order in which rows are locked).
func uniqueTags(tags []string) []string {
	out := slices.DeleteFunc(slices.Clone(tags), func(t string) bool { return t == "" })
	slices.Sort(out)
	return slices.Compact(out)
}

// addDaily adds sums to usage_daily, or with tagged to usage_daily_tags,
// in key order.
func (s *sqlStore) addDaily(ctx context.Context, tx *sql.Tx, tagged bool, daily map[dailyKey]*sums) error {
	if len(daily) == 0 {
		return nil
	}
	table, tagCol, tagVal := "usage_daily", "", ""
	if tagged {
		table, tagCol, tagVal = "usage_daily_tags", "tag, ", "?, "
	}
	up, err := tx.PrepareContext(ctx, s.q(`INSERT INTO `+table+` (day, `+tagCol+`key_id, team, pool, backend, model,
		requests, failovers, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_nusd)
		VALUES (?, `+tagVal+`?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (day, `+tagCol+`key_id, team, pool, backend, model) DO UPDATE SET
			requests = `+table+`.requests + excluded.requests,
			failovers = `+table+`.failovers + excluded.failovers,
			prompt_tokens = `+table+`.prompt_tokens + excluded.prompt_tokens,
			completion_tokens = `+table+`.completion_tokens + excluded.completion_tokens,
			cached_tokens = `+table+`.cached_tokens + excluded.cached_tokens,
			reasoning_tokens = `+table+`.reasoning_tokens + excluded.reasoning_tokens,
			cost_nusd = `+table+`.cost_nusd + excluded.cost_nusd`))
	if err != nil {
		return fmt.Errorf("ledger: record usage: %w", err)
	}
	defer up.Close()
	keys := make([]dailyKey, 0, len(daily))
	for dk := range daily {
		keys = append(keys, dk)
	}
	slices.SortFunc(keys, func(a, b dailyKey) int {
		return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.tag, b.tag), cmp.Compare(a.key, b.key),
			cmp.Compare(a.team, b.team), cmp.Compare(a.pool, b.pool), cmp.Compare(a.backend, b.backend),
			cmp.Compare(a.model, b.model))
	})
	for _, dk := range keys {
		sm := daily[dk]
		args := []any{dk.day}
		if tagged {
			args = append(args, dk.tag)
		}
		args = append(args, dk.key, dk.team, dk.pool, dk.backend, dk.model,
			sm.requests, sm.failovers, sm.prompt, sm.completion, sm.cached, sm.reasoning, sm.nus)
		if _, err := up.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("ledger: record usage: daily sums: %w", err)
		}
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// groupColumns maps SpendQuery.By to columns, which both usage tables
// (and usage_daily_tags) have; ByTag is tagColumn; end_user only
// usage_requests has (see SpendQuery.byRequest).
var groupColumns = map[string]string{
	ByKey: "key_id", ByTeam: "team", ByPool: "pool", ByBackend: "backend", ByModel: "model", ByDay: "day",
	ByEndUser: "end_user",
}

// hourColumn numbers a request's UTC hour: hours since the epoch.
const hourColumn = "(u.at_us / 3600000000)"

// spendSQL builds the query of q, grouped by groups (q.By without
// repeats), and its arguments. Only column names of this package go into
// its text; every value is an argument.
func spendSQL(q SpendQuery, groups []string) (string, []any) {
	tagged := q.Tag != "" || slices.Contains(groups, ByTag)
	daily := !q.byRequest() && !slices.Contains(groups, ByHour)
	var cols []string
	for _, g := range groups {
		switch {
		case g == ByHour:
			cols = append(cols, hourColumn)
		case g != ByTag:
			cols = append(cols, "u."+groupColumns[g])
		case daily:
			cols = append(cols, "u.tag")
		default: // a request without tags is grouped under ''
			cols = append(cols, "COALESCE(t.tag, '')")
		}
	}
	var query strings.Builder
	query.WriteString("SELECT ")
	for _, c := range cols {
		query.WriteString(c + ", ")
	}
	var args []any
	if daily {
		table := "usage_daily"
		if tagged {
			table = "usage_daily_tags"
		}
		query.WriteString(`CAST(COALESCE(SUM(requests), 0) AS BIGINT), CAST(COALESCE(SUM(failovers), 0) AS BIGINT),
			` + sumColumns + ` FROM ` + table + ` u WHERE u.day >= ? AND u.day < ?`)
		args = append(args, dayOf(q.From), dayOf(q.To))
		if q.Tag != "" {
			query.WriteString(" AND u.tag = ?")
			args = append(args, q.Tag)
		}
	} else {
		query.WriteString(`COUNT(*), CAST(COALESCE(SUM(failover), 0) AS BIGINT),
			` + sumColumns + ` FROM usage_requests u`)
		switch {
		case q.Tag != "":
			query.WriteString(" JOIN usage_tags t ON t.request_id = u.request_id AND t.tag = ?")
			args = append(args, q.Tag)
		case tagged:
			query.WriteString(" LEFT JOIN usage_tags t ON t.request_id = u.request_id")
		}
		query.WriteString(" WHERE u.at_us >= ? AND u.at_us < ? AND u.unanswered = 0")
		args = append(args, q.From.UnixMicro(), q.To.UnixMicro())
	}
	if q.Key != "" {
		query.WriteString(" AND u.key_id = ?")
		args = append(args, q.Key)
	}
	if q.Team != "" {
		query.WriteString(" AND u.team = ?")
		args = append(args, q.Team)
	}
	if q.EndUser != "" {
		query.WriteString(" AND u.end_user = ?")
		args = append(args, q.EndUser)
	}
	if len(cols) > 0 {
		list := strings.Join(cols, ", ")
		query.WriteString(" GROUP BY " + list + " ORDER BY " + list)
	}
	return query.String(), args
}

func (s *sqlStore) Spend(ctx context.Context, q SpendQuery) ([]SpendRow, error) {
	if err := q.validate(); err != nil {
		return nil, err
	}
	var groups []string
	for _, b := range q.By {
		if !slices.Contains(groups, b) {
			groups = append(groups, b)
		}
	}
	query, args := spendSQL(q, groups)
	rows, err := s.r.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: spend: %w", err)
	}
	defer rows.Close()
	var out []SpendRow
	for rows.Next() {
		var r SpendRow
		var day string
		var nus, hour int64
		dest := make([]any, 0, len(groups)+7)
		for _, g := range groups {
			dest = append(dest, r.groupField(g, &day, &hour))
		}
		dest = append(dest, &r.Requests, &r.Failovers, &r.PromptTokens, &r.CompletionTokens,
			&r.CachedTokens, &r.ReasoningTokens, &nus)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("ledger: spend: %w", err)
		}
		if day != "" {
			if r.Day, err = time.Parse(time.DateOnly, day); err != nil {
				return nil, fmt.Errorf("ledger: spend: day %q: %w", day, err)
			}
		}
		if slices.Contains(groups, ByHour) {
			r.Hour = time.Unix(hour*3600, 0).UTC()
		}
		r.Cost = fromNano(nus)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: spend: %w", err)
	}
	return out, nil
}

// groupField is where the value of grouping g is scanned: a field of r,
// or day (as stored) for ByDay.
func (r *SpendRow) groupField(g string, day *string, hour *int64) any {
	switch g {
	case ByHour:
		return hour
	case ByKey:
		return &r.Key
	case ByTeam:
		return &r.Team
	case ByPool:
		return &r.Pool
	case ByBackend:
		return &r.Backend
	case ByModel:
		return &r.Model
	case ByTag:
		return &r.Tag
	case ByEndUser:
		return &r.EndUser
	}
	return day
}

const sumColumns = `CAST(COALESCE(SUM(prompt_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(completion_tokens), 0) AS BIGINT),
	CAST(COALESCE(SUM(cached_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(reasoning_tokens), 0) AS BIGINT),
	CAST(COALESCE(SUM(cost_nusd), 0) AS BIGINT)`

func (s *sqlStore) SpentSince(ctx context.Context, f Filter, since time.Time) (float64, int64, error) {
	query := `SELECT CAST(COALESCE(SUM(cost_nusd), 0) AS BIGINT),
		CAST(COALESCE(SUM(prompt_tokens + completion_tokens), 0) AS BIGINT) FROM `
	var args []any
	if isMidnight(since) {
		query += "usage_daily WHERE day >= ?"
		args = append(args, dayOf(since))
	} else {
		query += "usage_requests WHERE at_us >= ?"
		args = append(args, since.UnixMicro())
	}
	if f.Key != "" {
		query += " AND key_id = ?"
		args = append(args, f.Key)
	}
	if f.Team != "" {
		query += " AND team = ?"
		args = append(args, f.Team)
	}
	var nus, tokens int64
	if err := s.r.QueryRowContext(ctx, s.q(query), args...).Scan(&nus, &tokens); err != nil {
		return 0, 0, fmt.Errorf("ledger: spent since: %w", err)
	}
	return fromNano(nus), tokens, nil
}

func (s *sqlStore) Close() error {
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

type scanner interface{ Scan(dest ...any) error }

func scanKey(row scanner) (Key, error) {
	var k Key
	var pools, models, tags, metadata, cache, requestLog string
	var maxConc, budget, expires, created, revoked, patience, prevUntil int64
	if err := row.Scan(&k.ID, &k.Name, &k.Team, &k.Prefix, &k.Hash, &pools, &models, &k.RPM, &k.TPM,
		&maxConc, &budget, &k.BudgetPeriod, &expires, &created, &revoked, &patience,
		&k.PrevPrefix, &k.PrevHash, &prevUntil, &tags, &metadata, &cache, &requestLog); err != nil {
		return Key{}, err
	}
	if cache != "" {
		p, err := cachepolicy.ParseJSON([]byte(cache))
		if err != nil {
			return Key{}, fmt.Errorf("cache of %s: %w", k.ID, err)
		}
		k.Cache = p
	}
	rl, err := parseRequestLog(requestLog)
	if err != nil {
		return Key{}, fmt.Errorf("request_log of %s: %w", k.ID, err)
	}
	k.RequestLog = rl
	if k.PrevPrefix == "" {
		k.PrevHash = nil
	}
	k.PrevUntil = fromMicros(prevUntil)
	k.Patience = time.Duration(patience) * time.Millisecond
	if err := json.Unmarshal([]byte(pools), &k.Pools); err != nil {
		return Key{}, fmt.Errorf("pools of %s: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(models), &k.Models); err != nil {
		return Key{}, fmt.Errorf("models of %s: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(tags), &k.Tags); err != nil {
		return Key{}, fmt.Errorf("tags of %s: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(metadata), &k.Metadata); err != nil {
		return Key{}, fmt.Errorf("metadata of %s: %w", k.ID, err)
	}
	if len(k.Tags) == 0 {
		k.Tags = nil
	}
	if len(k.Metadata) == 0 {
		k.Metadata = nil
	}
	if len(k.Pools) == 0 {
		k.Pools = nil
	}
	if len(k.Models) == 0 {
		k.Models = nil
	}
	k.MaxConcurrent = int(maxConc)
	k.Budget = fromNano(budget)
	k.Expires, k.Created, k.Revoked = fromMicros(expires), fromMicros(created), fromMicros(revoked)
	return k, nil
}

// nonNil is b, or an empty slice for a NOT NULL column.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// jsonMap stores metadata as a JSON object ("{}" when empty).
func jsonMap(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m) // a map[string]string always marshals
	return string(b)
}

// validKey checks what a store refuses to keep: an unknown budget period,
// tags or metadata out of bounds (see package labels).
func validKey(k Key) error {
	if err := validPeriod(k.BudgetPeriod); err != nil {
		return err
	}
	if _, err := labels.Tags(k.Tags); err != nil {
		return fmt.Errorf("%w: key %s: %v", ErrInvalid, k.ID, err)
	}
	if err := labels.Metadata(k.Metadata); err != nil {
		return fmt.Errorf("%w: key %s: %v", ErrInvalid, k.ID, err)
	}
	if ps := k.Cache.Check(true); len(ps) > 0 {
		return fmt.Errorf("%w: key %s: cache: %v", ErrInvalid, k.ID, &ps[0])
	}
	if msg := k.RequestLog.Check(); msg != "" {
		return fmt.Errorf("%w: key %s: request_log: %s", ErrInvalid, k.ID, msg)
	}
	return nil
}

// cacheText stores a key's cache policy as its JSON ("" for none).
func cacheText(p *cachepolicy.Policy) string {
	if p == nil {
		return ""
	}
	b, _ := json.Marshal(p) // a Policy always marshals
	return string(b)
}

// jsonList stores a list as a JSON array ("[]" when empty).
func jsonList(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(l) // a []string always marshals
	return string(b)
}
