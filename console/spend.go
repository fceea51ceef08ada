package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// spendRanges are the spend page's ranges, in days.
var spendRanges = []int{7, 30, 90}

// spendGroupings are what the spend chart stacks by.
var spendGroupings = []string{ledger.ByTeam, ledger.ByKey, ledger.ByModel, ledger.ByBackend}

// trafficGroupings are what the traffic charts draw a series of.
var trafficGroupings = []string{ledger.ByBackend, ledger.ByPool}

// trafficLimit bounds the request log rows the traffic charts read from
// a store without daily traffic sums (ledger.TrafficReader): the newest
// of the range, so that a page costs at most this many rows.
const trafficLimit = 10_000

// maxBurnCharts bounds the budget charts (one Spend query each).
const maxBurnCharts = 24

// spendData is the spend and traffic page.
type spendData struct {
	Store     bool
	Err       string
	Days      int
	By        string
	TrafficBy string
	Ranges    []int
	Groupings []string
	TBy       []string
	From, To  time.Time
	Total     float64
	Spend     svgChart
	Burn      []burnChart
	// BurnMore counts the budgets not charted (past maxBurnCharts).
	BurnMore int
	Traffic  []svgChart
	// TrafficRows is how many requests the traffic charts count;
	// Truncated, that the range holds more (a store without daily sums:
	// the oldest days are partial).
	TrafficRows int
	Truncated   bool
}

// burnChart is one budget's burn-down.
type burnChart struct {
	Owner, Name     string
	Period          string
	Limit, Spent    float64
	Start, End      time.Time
	Over, NearLimit bool
	Chart           svgChart
}

// spendPage draws spend per day by a grouping, the budgets' burn-down
// and traffic per day by pool or backend. Viewers may read it.
func (c *Console) spendPage(w http.ResponseWriter, r *http.Request, s *session) {
	v := r.URL.Query()
	d := spendData{Days: 30, By: ledger.ByTeam, TrafficBy: ledger.ByBackend, Ranges: spendRanges, Groupings: spendGroupings, TBy: trafficGroupings}
	status := http.StatusOK
	var bad []error
	if x := v.Get("days"); x != "" {
		n, err := strconv.Atoi(x)
		if err != nil || !slices.Contains(spendRanges, n) {
			bad = append(bad, fmt.Errorf("days %q is not one of 7, 30, 90", bounded(x)))
		} else {
			d.Days = n
		}
	}
	if x := v.Get("by"); x != "" {
		if !slices.Contains(spendGroupings, x) {
			bad = append(bad, fmt.Errorf("by %q is not one of team, key, model, backend", bounded(x)))
		} else {
			d.By = x
		}
	}
	if x := v.Get("traffic"); x != "" {
		if !slices.Contains(trafficGroupings, x) {
			bad = append(bad, fmt.Errorf("traffic %q is not one of backend, pool", bounded(x)))
		} else {
			d.TrafficBy = x
		}
	}
	if len(bad) > 0 {
		d.Err, status = errors.Join(bad...).Error(), http.StatusBadRequest
	}
	st := c.store()
	if st == nil || len(bad) > 0 {
		d.Store = st != nil
		c.render(w, status, "spend", s, d)
		return
	}
	d.Store = true
	now := c.now().UTC()
	d.To = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1)
	d.From = d.To.AddDate(0, 0, -d.Days)
	days := make([]time.Time, d.Days)
	for i := range days {
		days[i] = d.From.AddDate(0, 0, i)
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var errs []error
	var err error
	d.Spend, d.Total, err = spendChart(ctx, st, d.From, d.To, d.By, days)
	errs = append(errs, err)
	d.Burn, d.BurnMore, err = c.burnCharts(ctx, st, now)
	errs = append(errs, err)
	d.Traffic, d.TrafficRows, d.Truncated, err = c.trafficCharts(ctx, st, d, days)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		d.Err = "The store answered with an error: " + err.Error()
		status = http.StatusInternalServerError
	}
	c.render(w, status, "spend", s, d)
}

// spendChart is spend per day stacked by grouping by, from the daily
// aggregate (whole days: its size does not grow with traffic), and the
// range's total. The store's keys are shown as "name (id)".
func spendChart(ctx context.Context, st ledger.Store, from, to time.Time, by string, days []time.Time) (svgChart, float64, error) {
	c := newChart("spend-chart", "Spend per day by "+by+" (USD)", "USD")
	rows, err := st.Spend(ctx, ledger.SpendQuery{From: from, To: to, By: []string{ledger.ByDay, by}})
	if err != nil {
		c.Empty = "The store answered with an error."
		return c, 0, err
	}
	// Keys are named by name and id (names need not be unique).
	names := map[string]string{}
	if by == ledger.ByKey {
		keys, err := st.Keys(ctx)
		if err != nil {
			return c, 0, err
		}
		for _, k := range keys {
			if k.Name != "" {
				names[k.ID] = k.Name + " (" + k.ID + ")"
			}
		}
	}
	idx := map[string]int{}
	var ss []series
	var total float64
	for _, r := range rows {
		name := map[string]string{ledger.ByTeam: r.Team, ledger.ByKey: r.Key, ledger.ByModel: r.Model, ledger.ByBackend: r.Backend}[by]
		if n, ok := names[name]; ok {
			name = n
		}
		if name == "" {
			name = "(none)"
		}
		i, ok := idx[name]
		if !ok {
			i = len(ss)
			idx[name] = i
			ss = append(ss, series{Name: name, Values: make([]float64, len(days))})
		}
		day := int(r.Day.Sub(from) / (24 * time.Hour))
		if day < 0 || day >= len(days) {
			continue
		}
		ss[i].Values[day] += r.Cost
		total += r.Cost
	}
	return stackedDays(c, days, topSeries(ss, len(days)), fmtUSD), total, nil
}

// burnCharts draws, for each key and team with a budget (keys first, at
// most maxBurnCharts), its spend so far in the budget's current period,
// cumulated per day (per hour for periods of two days or less), against
// the limit.
func (c *Console) burnCharts(ctx context.Context, st ledger.Store, now time.Time) ([]burnChart, int, error) {
	keys, err := st.Keys(ctx)
	if err != nil {
		return nil, 0, err
	}
	teams, err := st.Teams(ctx)
	if err != nil {
		return nil, 0, err
	}
	type budget struct {
		owner, name, id, period string
		limit                   float64
		f                       ledger.Filter
	}
	var bs []budget
	for _, k := range keys {
		if k.Budget > 0 && k.Revoked.IsZero() {
			name := k.Name
			if name == "" {
				name = k.ID
			}
			bs = append(bs, budget{"key", name, k.ID, k.BudgetPeriod, k.Budget, ledger.Filter{Key: k.ID}})
		}
	}
	for _, t := range teams {
		if t.Budget > 0 {
			bs = append(bs, budget{"team", t.Name, t.Name, t.BudgetPeriod, t.Budget, ledger.Filter{Team: t.Name}})
		}
	}
	more := max(len(bs)-maxBurnCharts, 0)
	bs = bs[:min(len(bs), maxBurnCharts)]
	var out []burnChart
	for _, b := range bs {
		start, err := ledger.PeriodStart(b.period, now)
		if err != nil {
			continue // validated when stored; an unknown period has no chart
		}
		end := ledger.PeriodEnd(b.period, start)
		bc := burnChart{Owner: b.owner, Name: b.name, Period: b.period, Limit: b.limit, Start: start, End: end}
		step, by, label := 24*time.Hour, ledger.ByDay, "day"
		if end.Sub(start) <= 48*time.Hour {
			step, by, label = time.Hour, ledger.ByHour, "hour"
		}
		var slots []time.Time
		for t := start; t.Before(end) && len(slots) < 400; t = t.Add(step) {
			if by == ledger.ByDay {
				t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
			}
			if len(slots) > 0 && !t.After(slots[len(slots)-1]) {
				continue
			}
			slots = append(slots, t)
		}
		q := ledger.SpendQuery{From: start, To: earliest(end, now.Add(time.Second)), By: []string{by}, Key: b.f.Key, Team: b.f.Team}
		if !q.To.After(q.From) {
			q.To = q.From.Add(time.Second)
		}
		rows, err := st.Spend(ctx, q)
		if err != nil {
			return out, more, err
		}
		per := make([]float64, len(slots))
		for _, r := range rows {
			at := r.Day
			if by == ledger.ByHour {
				at = r.Hour
			}
			i, _ := slices.BinarySearchFunc(slots, at, func(a, b time.Time) int { return a.Compare(b) })
			if i >= len(slots) || !slots[i].Equal(at) {
				i = max(i-1, 0)
			}
			per[i] += r.Cost
		}
		cum := make([]float64, len(slots))
		var sum float64
		for i, t := range slots {
			sum += per[i]
			cum[i] = sum
			if t.After(now) {
				cum[i] = math.NaN() // the future: nothing to draw yet
			}
		}
		bc.Spent = sum
		bc.Over, bc.NearLimit = sum >= b.limit, sum >= 0.8*b.limit
		title := fmt.Sprintf("Spend so far this %s of %s %s against its budget (USD, cumulative per %s)", periodName(b.period), b.owner, b.name, label)
		ch := newChart("burn-"+b.owner+"-"+b.id, title, "USD")
		ch = linesDays(ch, slots, []series{{Name: "spent", Values: cum}}, fmtUSD, b.limit, "budget")
		if by == ledger.ByHour {
			for i := range ch.XTicks {
				ch.XTicks[i].Label = slots[i*((len(slots)+7)/8)].Format("15:04")
			}
			for i := range ch.Lines[0].Dots {
				ch.Lines[0].Dots[i].Title = fmt.Sprintf("%s: %s", slots[i].Format("2006-01-02 15:04Z"), fmtUSD(cum[i]))
			}
		}
		ch.Empty = "" // an empty period still shows its limit
		bc.Chart = ch
		out = append(out, bc)
	}
	return out, more, nil
}

func periodName(p string) string {
	switch p {
	case ledger.PeriodDay, ledger.PeriodWeek, ledger.PeriodMonth:
		return p
	}
	return p + " period"
}

// trafficCharts draws requests, errors (status 400 and above, or no
// answer), failovers and p95 duration per day by pool or backend (the
// one that answered; "(none)" for a request none answered), from the
// store's daily traffic sums (ledger.TrafficReader): exact counts over
// the whole range. A store without them gives the request log's newest
// trafficLimit rows, and the page says when the range holds more. It
// returns the charts, how many requests they count and whether that is
// only the newest part of the range.
func (c *Console) trafficCharts(ctx context.Context, st ledger.Store, d spendData, days []time.Time) ([]svgChart, int, bool, error) {
	sums, truncated, err := trafficSums(ctx, st, d.From, d.To)
	if err != nil {
		return nil, 0, false, err
	}
	type cell struct {
		req, errs, fo float64
		lat           ledger.Histogram
	}
	names := map[string]int{}
	var order []string
	var cells [][]cell
	total := 0
	for _, u := range sums {
		name := u.Backend
		if d.TrafficBy == ledger.ByPool {
			name = u.Pool
		}
		if name == "" {
			name = "(none)"
		}
		day := int(u.Day.Sub(d.From) / (24 * time.Hour))
		if u.Day.Before(d.From) || day >= len(days) {
			continue
		}
		i, ok := names[name]
		if !ok {
			i = len(order)
			names[name] = i
			order = append(order, name)
			cells = append(cells, make([]cell, len(days)))
		}
		cl := &cells[i][day]
		cl.req += float64(u.Requests)
		cl.errs += float64(u.Errors)
		cl.fo += float64(u.Failovers)
		cl.lat.Merge(u.Latency)
		total += int(u.Requests)
	}
	mk := func(f func(cell) float64) []series {
		out := make([]series, len(order))
		for i, n := range order {
			out[i] = series{Name: n, Values: make([]float64, len(days))}
			for j, cl := range cells[i] {
				out[i].Values[j] = f(cl)
			}
		}
		return out
	}
	// The same series (in the order of their requests) keep the same
	// colour in every chart.
	reqs := topSeries(mk(func(c cell) float64 { return c.req }), len(days))
	keep := map[string]bool{}
	for _, s := range reqs {
		keep[s.Name] = true
	}
	pick := func(ss []series) []series {
		var out []series
		for _, r := range reqs {
			for _, s := range ss {
				if s.Name == r.Name {
					out = append(out, s)
				}
			}
		}
		if keep["other"] {
			other := series{Name: "other", Values: make([]float64, len(days))}
			for _, s := range ss {
				if !keep[s.Name] {
					for i, v := range s.Values {
						other.Values[i] += v
					}
				}
			}
			out = append(out, other)
		}
		return out
	}
	by := d.TrafficBy
	charts := []svgChart{
		stackedDays(newChart("requests-chart", "Requests per day by "+by, "requests"), days, reqs, fmtCount("req")),
		stackedDays(newChart("errors-chart", "Errors per day by "+by+" (status 400 and above, or no answer)", "requests"), days,
			pick(mk(func(c cell) float64 { return c.errs })), fmtCount("err")),
		stackedDays(newChart("failovers-chart", "Failovers per day by "+by+" (answered by another backend than the first tried)", "requests"), days,
			pick(mk(func(c cell) float64 { return c.fo })), fmtCount("failover")),
	}
	// p95 is read from the histogram: the upper edge of its bucket (the
	// true p95 is at most that, and above the edge below); past the last
	// edge it is drawn at the last.
	lastEdge := float64(ledger.TrafficBuckets()[len(ledger.TrafficBuckets())-1])
	p95 := mk(func(c cell) float64 { return min(c.lat.Quantile(0.95), lastEdge) })
	var lines []series
	for _, r := range reqs {
		if i, ok := names[r.Name]; ok {
			lines = append(lines, p95[i])
		}
	}
	charts = append(charts, linesDays(newChart("p95-chart", "p95 duration per day by "+by+
		" (ms, calls only: cache answers excluded; the upper edge of the p95's latency bucket)", "ms"), days, lines, fmtCount("ms"), 0, ""))
	return charts, total, truncated, nil
}

// trafficSums reads the traffic of [from, to) summed per day, pool and
// backend (ledger.TrafficReader); from a store without those sums, it
// sums the request log's newest trafficLimit rows instead, and says
// whether the range held more.
func trafficSums(ctx context.Context, st ledger.Store, from, to time.Time) ([]ledger.TrafficSum, bool, error) {
	if tr, ok := st.(ledger.TrafficReader); ok {
		sums, err := tr.TrafficSums(ctx, from, to)
		return sums, false, err
	}
	us, err := st.Requests(ctx, ledger.RequestQuery{From: from, To: to, Limit: trafficLimit})
	if err != nil {
		return nil, false, err
	}
	type key struct {
		day           time.Time
		pool, backend string
	}
	idx := map[key]int{}
	var out []ledger.TrafficSum
	for _, u := range us {
		at := u.At.UTC()
		k := key{time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC), u.Pool, u.Backend}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, ledger.TrafficSum{Day: k.day, Pool: k.pool, Backend: k.backend})
		}
		out[i].Add(u)
	}
	// In the store's order, so that series come in the same order.
	slices.SortFunc(out, func(a, b ledger.TrafficSum) int {
		return cmp.Or(a.Day.Compare(b.Day), cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Backend, b.Backend))
	})
	return out, len(us) == trafficLimit, nil
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
