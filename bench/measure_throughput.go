package bench

import (
	"context"
	"fmt"
)

// throughput is the max req/s rows: wrk (or the built-in closed loop) at
// each of Conns, targets interleaved round by round.
func (r *runner) throughput(ctx context.Context) error {
	var script string
	if r.o.Wrk != "" {
		var err error
		if script, err = wrkScript(r.o.Dir, chatRequest("", false)); err != nil {
			return err
		}
	} else {
		r.rep.note("wrk not found: max req/s is from the built-in closed-loop generator (in the bench process, sharing its CPU), lower than wrk's")
	}
	for round := range r.o.Rounds {
		for _, tc := range r.o.Conns {
			threads, conns := tc[0], tc[1]
			label := fmt.Sprintf("max req/s, wrk -t%d -c%d", threads, conns)
			if r.o.Wrk == "" {
				label = fmt.Sprintf("max req/s, built-in, %d conns", conns)
			}
			if r.o.Rounds > 1 {
				label += fmt.Sprintf(" (median of %d)", r.o.Rounds)
			}
			row := r.rep.row(fmt.Sprintf("rps_t%dc%d", threads, conns), label, "req/s", 0)
			r.progress("%s, round %d of %d", label, round+1, r.o.Rounds)
			for _, t := range r.order(round) {
				if r.o.Wrk != "" {
					res, err := runWrk(ctx, r.o.Wrk, script, t.url, threads, conns, r.o.Duration)
					if err != nil {
						if ctx.Err() != nil {
							return ctx.Err()
						}
						return err
					}
					r.rep.fail(t.name, int(res.Errors))
					row.add(t.name, res.RPS)
					continue
				}
				c := &caller{client: newClient(conns), req: chatRequest(t.url, false)}
				sum, err := closedLoop(ctx, c, conns, r.o.Duration)
				if err != nil {
					return err
				}
				r.rep.fail(t.name, sum.Failed)
				row.add(t.name, sum.Goodput)
				c.client.CloseIdleConnections()
			}
		}
	}
	return ctx.Err()
}
