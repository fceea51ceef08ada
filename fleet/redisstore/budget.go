package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchover-gw/switchover/fleet"
)

// Budgets shared by the fleet (fleet.Budgets): one account per subject
// and period, two keys,
//
//	PREFIX {budget}:SUBJECT:START         a hash: "spent", "held", and "h:ID" → amount of each hold
//	PREFIX {budget}:SUBJECT:START:holds   a sorted set: hold ID scored by its deadline (ms)
//
// START is the period's start in Unix seconds. SUBJECT is "key:ID",
// "team:NAME", "org:NAME", "key:ID/pool:NAME", or an end user's
// "user:key:ID/HASH" or "user:team:NAME/HASH" (HASH: 24 hex digits of
// the SHA-256 of the end user's id). Amounts are integer nano-dollars. A
// hold and a settle each run as one Lua script over every account of a
// request (up to six), so all are held or none. The scripts touch
// several keys: every budget key carries the hash tag {budget}, so that
// on a cluster they share one slot (and one master), which is the price
// of holding them at once. Both keys expire the line's Keep (a day when
// zero; an end user's, an hour) after their period ends, by the caller's
// clock (a relative expiry, so that a replica's skewed clock cannot drop
// them early). An account after its requests settled is one hash of two
// fields (its holds' sorted set is empty, so Redis deletes it).
//
// Holds whose deadline is past are swept by the next script on their
// account, so a replica that dies holding some locks nothing for longer
// than their deadline. spent never falls below the figure the caller
// brings (its store's spend plus its own since): an account that is
// missing (new, or lost in a Redis restart) starts from it, so a budget
// is never reset to zero by Redis.

var _ fleet.Budgets = (*Store)(nil)

func (s *Store) budgetKey(l fleet.BudgetLine) string {
	return s.prefix + "{budget}:" + l.Subject + ":" + strconv.FormatInt(l.Start.Unix(), 10)
}

// budgetGrace is how long an account outlives its period.
const budgetGrace = 24 * time.Hour

// expireIn is how long a line's keys are kept from now, in ms: until
// its Keep (zero: budgetGrace) after its period ends (without an End, 32
// days after it starts), and at least that.
func expireIn(l fleet.BudgetLine, now time.Time) string {
	end := l.End
	if end.IsZero() {
		end = l.Start.Add(32 * 24 * time.Hour)
	}
	keep := l.Keep
	if keep <= 0 {
		keep = budgetGrace
	}
	return strconv.FormatInt(max(end.Sub(now), 0).Milliseconds()+max(keep.Milliseconds(), 1), 10)
}

// holdScript holds ARGV[3+4i+3] nano-dollars under id ARGV[1] on every
// account i (KEYS[2i+1] its hash, KEYS[2i+2] its deadlines), or on none.
// ARGV[2] is now and ARGV[3] the hold's deadline, in ms; per account
// ARGV: budget, seed, amount, time to live (ms). Returns {held (1/0), spent1,
// held1, spent2, held2, …}: the figures before this hold.
var holdScript = redis.NewScript(`
local id, now, deadline = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local n = #KEYS / 2
local out, ok = {0}, true
for i = 1, n do
  local h, z, a = KEYS[2*i-1], KEYS[2*i], 4 + 4*(i-1)
  local budget, seed, amount = tonumber(ARGV[a]), tonumber(ARGV[a+1]), tonumber(ARGV[a+2])
  local dead = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, d in ipairs(dead) do
    local amt = redis.call('HGET', h, 'h:' .. d)
    if amt then
      redis.call('HDEL', h, 'h:' .. d)
      redis.call('HINCRBY', h, 'held', 0 - tonumber(amt))
    end
  end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', z, '-inf', now) end
  local spent = tonumber(redis.call('HGET', h, 'spent') or '-1')
  if spent < seed then
    spent = seed
    redis.call('HSET', h, 'spent', ARGV[a+1])
  end
  local held = tonumber(redis.call('HGET', h, 'held') or '0')
  if held < 0 then held = 0 end
  out[2*i], out[2*i+1] = spent, held
  if not (spent + held < budget and spent + held + amount <= budget) then ok = false end
end
if ok then
  out[1] = 1
  for i = 1, n do
    local h, z, a = KEYS[2*i-1], KEYS[2*i], 4 + 4*(i-1)
    redis.call('HSET', h, 'h:' .. id, ARGV[a+2])
    redis.call('HINCRBY', h, 'held', ARGV[a+2])
    redis.call('ZADD', z, deadline, id)
  end
end
for i = 1, n do
  local a = 4 + 4*(i-1)
  redis.call('PEXPIRE', KEYS[2*i-1], ARGV[a+3])
  redis.call('PEXPIRE', KEYS[2*i], ARGV[a+3])
end
return out
`)

// settleScript ends hold ARGV[1] on every account i (KEYS[2i+1],
// KEYS[2i+2]) and adds ARGV[2] nano-dollars to its spent, which is at
// least its seed after. Per account ARGV: seed, time to live (ms).
var settleScript = redis.NewScript(`
local id, cost = ARGV[1], tonumber(ARGV[2])
for i = 1, #KEYS / 2 do
  local h, z, a = KEYS[2*i-1], KEYS[2*i], 3 + 2*(i-1)
  local amt = redis.call('HGET', h, 'h:' .. id)
  if amt then
    redis.call('HDEL', h, 'h:' .. id)
    redis.call('HINCRBY', h, 'held', 0 - tonumber(amt))
    redis.call('ZREM', z, id)
  end
  local spent = tonumber(redis.call('HGET', h, 'spent') or '0') + cost
  local seed = tonumber(ARGV[a])
  if spent < seed then spent = seed end
  redis.call('HSET', h, 'spent', spent)
  redis.call('PEXPIRE', h, ARGV[a+1])
  redis.call('PEXPIRE', z, ARGV[a+1])
end
return 1
`)

// HoldBudget implements fleet.Budgets: one script, on the server's
// master of the {budget} slot.
func (s *Store) HoldBudget(ctx context.Context, id string, lines []fleet.BudgetLine, now, deadline time.Time) (bool, []fleet.BudgetFigures, error) {
	if err := s.check(ctx); err != nil {
		return false, nil, err
	}
	if len(lines) == 0 {
		return true, nil, nil
	}
	keys := make([]string, 0, 2*len(lines))
	args := make([]any, 0, 3+4*len(lines))
	args = append(args, id, strconv.FormatInt(now.UnixMilli(), 10), strconv.FormatInt(deadline.UnixMilli(), 10))
	for _, l := range lines {
		k := s.budgetKey(l)
		keys = append(keys, k, k+":holds")
		args = append(args, strconv.FormatInt(l.Budget, 10), strconv.FormatInt(max(l.Seed, 0), 10),
			strconv.FormatInt(max(l.Amount, 0), 10), expireIn(l, now))
	}
	res, err := holdScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return false, nil, s.fail(ctx, "hold budget", err)
	}
	if len(res) != 1+2*len(lines) {
		return false, nil, fmt.Errorf("redisstore: hold budget: %d figures for %d budgets", len(res), len(lines))
	}
	figs := make([]fleet.BudgetFigures, len(lines))
	for i := range figs {
		figs[i] = fleet.BudgetFigures{Spent: res[1+2*i], Held: res[2+2*i]}
	}
	return res[0] == 1, figs, nil
}

// SettleBudget implements fleet.Budgets.
func (s *Store) SettleBudget(ctx context.Context, id string, lines []fleet.BudgetLine, cost int64, now time.Time) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if len(lines) == 0 {
		return nil
	}
	keys := make([]string, 0, 2*len(lines))
	args := make([]any, 0, 2+2*len(lines))
	args = append(args, id, strconv.FormatInt(max(cost, 0), 10))
	for _, l := range lines {
		k := s.budgetKey(l)
		keys = append(keys, k, k+":holds")
		args = append(args, strconv.FormatInt(max(l.Seed, 0), 10), expireIn(l, now))
	}
	return s.fail(ctx, "settle budget", settleScript.Run(ctx, s.rdb, keys, args...).Err())
}
