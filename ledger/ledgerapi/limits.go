package ledgerapi

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/internal/quantity"
	"github.com/switchover-gw/switchover/ledger"
)

// count reads rpm, tpm or max_concurrent: a JSON number or a string such
// as "200k" (see quantity.ParseCount).
func count(field string, v any) (int64, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return 0, badField(field, "expected a number or a string such as \"200k\"")
	}
	n, err := quantity.ParseCount(s)
	if err != nil {
		return 0, badField(field, "%v", err)
	}
	return n, nil
}

// budget is a budget being read from a body: the current one, changed by
// whichever of budget, budget_usd and budget_period were given.
type budget struct {
	usd    float64
	period string
}

// apply changes b by the fields of a body: budget ("50/month", a number
// of USD, or "" / 0 for none), budget_usd (a number) and budget_period
// (day, week, month, or hours or days such as 1h or 30d, see
// quantity.ParsePeriod). Nil fields leave b alone.
func (b *budget) apply(text, usd, period any) error {
	if text != nil && usd != nil {
		return badField("budget_usd", "give budget or budget_usd, not both")
	}
	switch x := text.(type) {
	case nil:
	case string:
		if t := strings.TrimSpace(x); t == "" || t == "0" || strings.EqualFold(t, "none") {
			b.usd, b.period = 0, ""
			break
		}
		v, p, err := quantity.ParseBudget(x)
		if err != nil {
			return badField("budget", "%v", err)
		}
		b.usd, b.period = v, p
	case json.Number:
		usd = x
	default:
		return badField("budget", "expected a string such as \"50/month\" or a number of US dollars")
	}
	if usd != nil {
		field := "budget_usd"
		if text != nil {
			field = "budget"
		}
		n, ok := usd.(json.Number)
		if !ok {
			return badField(field, "expected a number of US dollars")
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil || math.IsInf(f, 0) || f < 0 || f > 1e9 {
			return badField(field, "%s is not an amount from 0 to 1e9 US dollars", n)
		}
		b.usd = f
	}
	if period != nil {
		p, ok := period.(string)
		if !ok {
			return badField("budget_period", "expected day, week, month, or hours or days such as 1h or 30d")
		}
		c, err := quantity.ParsePeriod(p)
		if err != nil {
			return badField("budget_period", "%v", err)
		}
		b.period = c
	}
	if b.usd == 0 {
		b.period = ""
		return nil
	}
	if b.period == "" {
		return badField("budget_period", "required with a budget in US dollars: day, week, month, or hours or days such as 1h or 30d")
	}
	if _, err := ledger.PeriodStart(b.period, time.Time{}); err != nil {
		return badField("budget_period", "%q is not day, week, month, or hours or days such as 1h or 30d", b.period)
	}
	return nil
}

// soft reads soft_budget into *usd: an amount of US dollars (a number,
// or a string such as "$40"), or "", "none" or 0 for none; nil leaves it
// alone, but a budget removed removes it too. It must be below budget,
// the budget being set.
func soft(v any, usd *float64, budget float64) error {
	switch x := v.(type) {
	case nil:
		if budget == 0 {
			*usd = 0
		}
	case json.Number:
		f, err := strconv.ParseFloat(x.String(), 64)
		if err != nil || math.IsInf(f, 0) || f < 0 {
			return badField("soft_budget", "%s is not an amount of US dollars", x)
		}
		*usd = f
	case string:
		t := strings.TrimPrefix(strings.TrimSpace(x), "$")
		if t == "" || strings.EqualFold(t, "none") {
			*usd = 0
			break
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return badField("soft_budget", "%q is not an amount of US dollars", x)
		}
		*usd = f
	default:
		return badField("soft_budget", "expected a number of US dollars")
	}
	if *usd > 0 && *usd >= budget {
		if budget == 0 {
			return badField("soft_budget", "an alert below the budget needs a budget")
		}
		return badField("soft_budget", "$%s is not below the budget ($%s): lower it, or remove it with \"none\"",
			strconv.FormatFloat(*usd, 'f', -1, 64), strconv.FormatFloat(budget, 'f', -1, 64))
	}
	return nil
}

// poolBudgetBody is one of a key's budgets of one pool in a body.
type poolBudgetBody struct {
	Pool   string `json:"pool"`
	Budget string `json:"budget"`
}

// poolBudgets reads a key's budgets of one pool: each names a pool that
// exists (Handler.Pools), once, with a budget such as "5/day".
func (h *Handler) poolBudgets(bs []poolBudgetBody) ([]ledger.ScopedBudget, error) {
	var known []string
	if h.Pools != nil {
		known = h.Pools()
	}
	var out []ledger.ScopedBudget
	for i, b := range bs {
		field := "budgets[" + strconv.Itoa(i) + "]"
		pool := strings.TrimSpace(b.Pool)
		switch {
		case pool == "":
			return nil, badField(field+".pool", "a budget of a pool needs the pool")
		case h.Pools != nil && !slices.Contains(known, pool):
			return nil, badField(field+".pool", "%q is not one of %s", pool, strings.Join(known, ", "))
		case slices.ContainsFunc(out, func(o ledger.ScopedBudget) bool { return o.Pool == pool }):
			return nil, badField(field+".pool", "pool %q has a budget already", pool)
		}
		usd, period, err := quantity.ParseBudget(b.Budget)
		if err != nil {
			return nil, badField(field+".budget", "%v", err)
		}
		out = append(out, ledger.ScopedBudget{Pool: pool, Budget: usd, Period: period})
	}
	return out, nil
}

// expiry reads expires: a time from now ("90d", "36h"), an RFC 3339 time,
// or "" / "never" for none. It must be in the future.
func expiry(v any, now time.Time) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, badField("expires", "expected a string such as \"90d\", \"36h\" or an RFC 3339 time")
	}
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "never") {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		if !t.After(now) {
			return time.Time{}, badField("expires", "%s is in the past", s)
		}
		return t.UTC(), nil
	}
	d, err := quantity.ParseAge(s)
	if err != nil {
		return time.Time{}, badField("expires", "%q is neither a time from now such as 90d or 36h nor an RFC 3339 time", s)
	}
	return now.Add(d).UTC(), nil
}

// names checks a list of pools or models against the known names (nil
// known: not checked).
func names(field string, l []string, known func() []string) ([]string, error) {
	var k []string
	if known != nil {
		k = known()
	}
	var out []string
	for i, n := range l {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, badField(field+"["+strconv.Itoa(i)+"]", "empty name")
		}
		if err := checkName(field+"["+strconv.Itoa(i)+"]", n); err != nil {
			return nil, err
		}
		if known != nil && !slices.Contains(k, n) {
			return nil, badField(field+"["+strconv.Itoa(i)+"]", "%q is not one of %s", n, strings.Join(k, ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}
