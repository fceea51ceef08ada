package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// requestColumns are the columns of usage_requests read into a Usage.
const requestColumns = `request_id, at_us, key_id, team, pool, backend, region, model, tags, prompt_tokens,
	completion_tokens, cached_tokens, reasoning_tokens, cost_nusd, status, failover, estimated, end_user, cache, saved_nusd`

func (s *sqlStore) Requests(ctx context.Context, q RequestQuery) ([]Usage, error) {
	if err := q.validate(); err != nil {
		return nil, err
	}
	var where []string
	var args []any
	cond := func(c string, a ...any) {
		where = append(where, c)
		args = append(args, a...)
	}
	if !q.From.IsZero() {
		cond("u.at_us >= ?", q.From.UnixMicro())
	}
	if !q.To.IsZero() {
		cond("u.at_us < ?", q.To.UnixMicro())
	}
	if !q.Before.IsZero() {
		at := q.Before.At.UnixMicro()
		cond("(u.at_us < ? OR (u.at_us = ? AND u.request_id < ?))", at, at, q.Before.RequestID)
	}
	for col, v := range map[string]string{"u.key_id": q.Key, "u.team": q.Team, "u.model": q.Model, "u.end_user": q.EndUser} {
		if v != "" {
			cond(col+" = ?", v)
		}
	}
	if q.Tag != "" {
		cond("EXISTS (SELECT 1 FROM usage_tags t WHERE t.request_id = u.request_id AND t.tag = ?)", q.Tag)
	}
	if q.StatusMin != 0 {
		cond("u.status >= ?", q.StatusMin)
	}
	if q.StatusMax != 0 {
		cond("u.status <= ?", q.StatusMax)
	}
	query := `SELECT ` + requestColumns + ` FROM usage_requests u`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY u.at_us DESC, u.request_id DESC LIMIT ?"
	args = append(args, q.Limit)
	rows, err := s.r.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: requests: %w", err)
	}
	defer rows.Close()
	var out []Usage
	for rows.Next() {
		var u Usage
		var at, nus, failover, estimated, saved int64
		var tags string
		if err := rows.Scan(&u.RequestID, &at, &u.KeyID, &u.Team, &u.Pool, &u.Backend, &u.Region, &u.Model, &tags,
			&u.PromptTokens, &u.CompletionTokens, &u.CachedTokens, &u.ReasoningTokens, &nus, &u.Status,
			&failover, &estimated, &u.EndUser, &u.Cache, &saved); err != nil {
			return nil, fmt.Errorf("ledger: requests: %w", err)
		}
		if err := json.Unmarshal([]byte(tags), &u.Tags); err != nil {
			return nil, fmt.Errorf("ledger: requests: tags of %s: %w", u.RequestID, err)
		}
		if len(u.Tags) == 0 {
			u.Tags = nil
		}
		u.At, u.Cost, u.Failover, u.Estimated, u.Saved = fromMicros(at), fromNano(nus), failover != 0, estimated != 0, fromNano(saved)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: requests: %w", err)
	}
	return out, nil
}
