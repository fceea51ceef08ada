package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// requestColumns are the columns of usage_requests read into a Usage.
const requestColumns = `u.request_id, u.at_us, u.key_id, u.team, u.pool, u.backend, u.region, u.model, u.tags, u.prompt_tokens,
	u.completion_tokens, u.cached_tokens, u.reasoning_tokens, u.cost_nusd, u.status, u.failover, u.estimated, u.end_user, u.cache,
	u.saved_nusd, u.attempts, u.tried, u.hedge, u.duration_ms, u.first_byte_ms, u.unanswered`

// Requests reads the records q selects. With a Backend filter the query
// is driven by usage_attempts' index (backend, at_us, request_id), whose
// order is the log's: the newest requests of a backend come first
// without sorting, however many it has. The other filters have an index
// of (column, at_us, request_id) each (0006, 0007, 0011). A Text search
// is one such query per column it may match, each reading at most
// Limit rows through that column's index, merged: a single query with
// their OR would walk the time index and, when nothing matches, every
// row.
func (s *sqlStore) Requests(ctx context.Context, q RequestQuery) ([]Usage, error) {
	if err := q.validate(); err != nil {
		return nil, err
	}
	var query string
	var args []any
	if q.Text == "" {
		query, args = requestsQuery(q, "")
	} else {
		text := q.Text
		base := q
		base.Text = ""
		cols := []string{"u.request_id = ?", "u.key_id = ?", "u.team = ?", "u.pool = ?", "u.model = ?"}
		if !q.TextNoEndUser {
			cols = append(cols, "u.end_user = ? AND u.end_user <> ''") // the partial index's condition
		}
		var branches []string
		add := func(sql string, a []any) {
			branches = append(branches, fmt.Sprintf("SELECT * FROM (%s) AS t%d", sql, len(branches)))
			args = append(args, a...)
		}
		for _, c := range cols {
			add(requestsQuery(base, c, text))
		}
		// A backend it tried: driven by usage_attempts, or, when the
		// query is already, a condition on it.
		if base.Backend == "" {
			bq := base
			bq.Backend = text
			add(requestsQuery(bq, ""))
		} else {
			add(requestsQuery(base, "EXISTS (SELECT 1 FROM usage_attempts b2 WHERE b2.request_id = u.request_id AND b2.backend = ?)", text))
		}
		query = "SELECT * FROM (" + strings.Join(branches, " UNION ") + ") AS r ORDER BY r.at_us DESC, r.request_id DESC LIMIT ?"
		args = append(args, q.Limit)
	}
	rows, err := s.r.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: requests: %w", err)
	}
	defer rows.Close()
	var out []Usage
	for rows.Next() {
		u, err := scanRequest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: requests: %w", err)
	}
	return out, nil
}

// requestsQuery is the query of q's filters but Text, with the condition
// extra (on u, with its arguments) when not "", newest first, at most
// q.Limit rows.
func requestsQuery(q RequestQuery, extra string, extraArgs ...any) (string, []any) {
	var where []string
	var args []any
	cond := func(c string, a ...any) {
		where = append(where, c)
		args = append(args, a...)
	}
	// t is the table whose (at_us, request_id) orders the answer.
	t, from := "u", "usage_requests u"
	if q.Backend != "" {
		t, from = "b", "usage_attempts b JOIN usage_requests u ON u.request_id = b.request_id"
		cond("b.backend = ?", q.Backend)
	}
	if !q.From.IsZero() {
		cond(t+".at_us >= ?", q.From.UnixMicro())
	}
	if !q.To.IsZero() {
		cond(t+".at_us < ?", q.To.UnixMicro())
	}
	if !q.Before.IsZero() {
		at := q.Before.At.UnixMicro()
		cond("("+t+".at_us < ? OR ("+t+".at_us = ? AND "+t+".request_id < ?))", at, at, q.Before.RequestID)
	}
	for _, f := range []struct{ col, v string }{{"u.key_id", q.Key}, {"u.team", q.Team}, {"u.model", q.Model}, {"u.pool", q.Pool}} {
		if f.v != "" {
			cond(f.col+" = ?", f.v)
		}
	}
	if q.EndUser != "" {
		cond("u.end_user = ? AND u.end_user <> ''", q.EndUser) // the partial index's condition
	}
	if q.Tag != "" {
		cond("EXISTS (SELECT 1 FROM usage_tags t WHERE t.request_id = u.request_id AND t.tag = ?)", q.Tag)
	}
	switch {
	case q.StatusMin != 0 && q.StatusMin == q.StatusMax:
		cond("u.status = ?", q.StatusMin) // the index (status, at_us, request_id) gives the order
	default:
		if q.StatusMin != 0 {
			cond("u.status >= ?", q.StatusMin)
		}
		if q.StatusMax != 0 {
			cond("u.status <= ?", q.StatusMax)
		}
	}
	switch q.Failover {
	case "yes":
		cond("u.failover <> 0") // the partial index's own condition
	case "no":
		cond("u.failover = 0")
	}
	switch q.Cache {
	case "hit", "coalesced":
		cond("u.cache = ? AND u.cache <> ''", q.Cache)
	case "any":
		cond("u.cache <> ''")
	case "none":
		cond("u.cache = ''")
	}
	if extra != "" {
		cond(extra, extraArgs...)
	}
	// The page's ids first, then their rows: the ids alone may come from
	// a covering index (status, at_us, request_id), sorted there, where
	// sorting whole rows would read every match's row.
	ids := `SELECT ` + t + `.request_id FROM ` + from
	if len(where) > 0 {
		ids += " WHERE " + strings.Join(where, " AND ")
	}
	ids += " ORDER BY " + t + ".at_us DESC, " + t + ".request_id DESC LIMIT ?"
	query := `SELECT ` + requestColumns + ` FROM usage_requests u WHERE u.request_id IN (` + ids + `)
		ORDER BY u.at_us DESC, u.request_id DESC`
	return query, append(args, q.Limit)
}

func (s *sqlStore) Request(ctx context.Context, id string) (Usage, error) {
	if id == "" || len(id) > MaxText {
		return Usage{}, fmt.Errorf("%w: request %q", ErrNotFound, bounded(id, 64))
	}
	row := s.r.QueryRowContext(ctx, s.q(`SELECT `+requestColumns+` FROM usage_requests u WHERE u.request_id = ?`), id)
	u, err := scanRequest(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Usage{}, fmt.Errorf("%w: request %q", ErrNotFound, id)
	}
	return u, err
}

// scanRequest reads a row of requestColumns.
func scanRequest(row interface{ Scan(...any) error }) (Usage, error) {
	var u Usage
	var at, nus, failover, estimated, saved, unanswered int64
	var tags, attempts string
	if err := row.Scan(&u.RequestID, &at, &u.KeyID, &u.Team, &u.Pool, &u.Backend, &u.Region, &u.Model, &tags,
		&u.PromptTokens, &u.CompletionTokens, &u.CachedTokens, &u.ReasoningTokens, &nus, &u.Status,
		&failover, &estimated, &u.EndUser, &u.Cache, &saved, &attempts, &u.Tried, &u.Hedge, &u.DurationMs,
		&u.FirstByteMs, &unanswered); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return u, err
		}
		return u, fmt.Errorf("ledger: requests: %w", err)
	}
	if err := json.Unmarshal([]byte(tags), &u.Tags); err != nil {
		return u, fmt.Errorf("ledger: requests: tags of %s: %w", u.RequestID, err)
	}
	if len(u.Tags) == 0 {
		u.Tags = nil
	}
	if err := json.Unmarshal([]byte(attempts), &u.Attempts); err != nil {
		return u, fmt.Errorf("ledger: requests: attempts of %s: %w", u.RequestID, err)
	}
	if len(u.Attempts) == 0 {
		u.Attempts = nil
	}
	u.At, u.Cost, u.Failover, u.Estimated, u.Saved = fromMicros(at), fromNano(nus), failover != 0, estimated != 0, fromNano(saved)
	u.Unanswered = unanswered != 0
	return u, nil
}
