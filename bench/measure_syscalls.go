package bench

import (
	"context"
	"fmt"
)

// syscalls is the syscall row: strace -f -c attached to each target's
// processes while SyscallRate requests a second go through it.
func (r *runner) syscalls(ctx context.Context) error {
	if r.o.Strace == "" || r.o.SyscallRate <= 0 {
		return nil
	}
	row := r.rep.row("syscalls", fmt.Sprintf("syscalls per request at %g req/s (strace -f -c)", r.o.SyscallRate), "syscalls", 1)
	for _, t := range r.targets {
		if len(t.pids) == 0 {
			continue
		}
		r.progress("%s: strace at %g req/s", t.name, r.o.SyscallRate)
		c := &caller{client: newClient(64), req: chatRequest(t.url, false)}
		tr, err := startStrace(ctx, r.o.Strace, r.o.Dir, t.pids)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.rep.note("%s: strace failed: %v", t.name, err)
			continue
		}
		sum, err := fixedRate(ctx, c, r.o.SyscallRate, r.o.Duration)
		rows, total, serr := tr.stop()
		if err != nil {
			return err
		}
		r.rep.fail(t.name, sum.Failed+sum.Dropped)
		if serr != nil {
			r.rep.note("%s: strace output: %v", t.name, serr)
			continue
		}
		if sum.Requests == 0 {
			continue
		}
		row.add(t.name, float64(total)/float64(sum.Requests))
		if r.o.SyscallDetail {
			if r.rep.Syscalls == nil {
				r.rep.Syscalls = map[string][]SyscallRate{}
			}
			for _, c := range rows {
				r.rep.Syscalls[t.name] = append(r.rep.Syscalls[t.name], SyscallRate{c.Name, float64(c.Calls) / float64(sum.Requests)})
			}
		}
	}
	return ctx.Err()
}
