package ledger

import (
	"context"
	"database/sql"
	"fmt"
)

// The budget_rules table holds what a key or team has beside its own
// budget: its soft budget (pool ''), and a key's budgets of one pool.
// owner is "key:ID" or "team:NAME"; model is '' (kept for budgets by a
// model name that is not a pool's, should they come).

func keyOwner(id string) string    { return "key:" + id }
func teamOwner(name string) string { return "team:" + name }

// withRules runs write in a transaction of the writer and replaces
// owner's rules by soft and scoped in the same transaction.
func (s *sqlStore) withRules(ctx context.Context, owner string, soft float64, scoped []ScopedBudget, write func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	if err := write(tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM budget_rules WHERE owner = ?`), owner); err != nil {
		return err
	}
	insert := s.q(`INSERT INTO budget_rules (owner, pool, model, budget_nusd, budget_period) VALUES (?, ?, ?, ?, ?)`)
	if soft > 0 {
		if _, err := tx.ExecContext(ctx, insert, owner, "", "", toNano(soft), ""); err != nil {
			return err
		}
	}
	for _, b := range scoped {
		if _, err := tx.ExecContext(ctx, insert, owner, b.Pool, "", toNano(b.Budget), b.Period); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// rules is what budget_rules holds, by owner.
type rules struct {
	soft   map[string]float64
	scoped map[string][]ScopedBudget
}

// readRules reads the rules of owner, or of every owner with "".
func (s *sqlStore) readRules(ctx context.Context, owner string) (rules, error) {
	query, args := `SELECT owner, pool, budget_nusd, budget_period FROM budget_rules WHERE model = ''`, []any{}
	if owner != "" {
		query += ` AND owner = ?`
		args = append(args, owner)
	}
	rows, err := s.r.QueryContext(ctx, s.q(query+` ORDER BY owner, pool, model`), args...)
	if err != nil {
		return rules{}, fmt.Errorf("budget rules: %w", err)
	}
	defer rows.Close()
	out := rules{soft: map[string]float64{}, scoped: map[string][]ScopedBudget{}}
	for rows.Next() {
		var o string
		var b ScopedBudget
		var nus int64
		if err := rows.Scan(&o, &b.Pool, &nus, &b.Period); err != nil {
			return rules{}, fmt.Errorf("budget rules: %w", err)
		}
		if b.Pool == "" {
			out.soft[o] = fromNano(nus)
			continue
		}
		b.Budget = fromNano(nus)
		out.scoped[o] = append(out.scoped[o], b)
	}
	if err := rows.Err(); err != nil {
		return rules{}, fmt.Errorf("budget rules: %w", err)
	}
	return out, nil
}

// attach gives k its rules.
func (r rules) attach(k *Key) {
	k.SoftBudget = r.soft[keyOwner(k.ID)]
	k.Budgets = r.scoped[keyOwner(k.ID)]
}
