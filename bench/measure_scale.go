package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/internal/scaleconf"
	"github.com/switchover-gw/switchover/load"
)

// scaleShape is the gateway's "Use it" configuration grown in one
// dimension (internal/scaleconf, as the gateway's scale benchmarks),
// named for its row.
type scaleShape struct {
	name  string
	label string
	scaleconf.Shape
}

// scaleShapes are the configurations the scale rows compare, sizes
// multiplied by factor (Options.ScaleFactor), never below the base's.
func scaleShapes(factor float64) []scaleShape {
	n := func(full, least int) int { return max(least, int(float64(full)*factor)) }
	members, pools, aliases, keys := n(100, 2), n(10000, 1), n(10000, 1), n(100000, 1)
	return []scaleShape{
		{"base", `the "Use it" config`, scaleconf.Shape{Members: 2, Pools: 1, Keys: 1}},
		{"members", fmt.Sprintf("%d members at priority 1", members), scaleconf.Shape{Members: members, Flat: true, Pools: 1, Keys: 1}},
		{"pools", fmt.Sprintf("%d pools", pools), scaleconf.Shape{Members: 2, Pools: pools, Keys: 1}},
		{"aliases", fmt.Sprintf("%d aliases of the pool", aliases), scaleconf.Shape{Members: 2, Pools: 1, Aliases: aliases, Keys: 1}},
		{"keys", fmt.Sprintf("%d keys", keys), scaleconf.Shape{Members: 2, Pools: 1, Keys: keys}},
	}
}

// adminKey is the admin API's key of the reload's gateway.
const adminKey = "bench-admin-key-0123456789abcdef01234"

// scaleConfig writes s as a configuration file: the "Use it" shape, its
// backends at upstream; admin, if set, is an admin listener for the
// reload.
func scaleConfig(s scaleShape, listen, metrics, admin, upstream string) string {
	head := fmt.Sprintf("listen: %s\nserver:\n  metrics_listen: %s\n", listen, metrics)
	if admin != "" {
		head += fmt.Sprintf("admin:\n  listen: %s\n  key: %s\n", admin, adminKey)
	}
	return s.YAML(upstream, scaleconf.Options{Head: head, AppKey: benchKey,
		BackendKey: func(i int) string { return fmt.Sprintf("upstream-key-%d", i) }})
}

// startScaled starts a gateway on s's configuration.
func (r *runner) startScaled(ctx context.Context, s scaleShape, admin bool) (*target, error) {
	return thrice(func() (*target, error) { return r.startScaledOnce(ctx, s, admin) })
}

func (r *runner) startScaledOnce(ctx context.Context, s scaleShape, admin bool) (*target, error) {
	aaddr := ""
	if admin {
		var err error
		if aaddr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	st := r.starter()
	name := "switchover-" + s.name
	t, err := st.gateway(ctx, name, name, st.gwEnv, func(addr, maddr string) string {
		return scaleConfig(s, addr, maddr, aaddr, r.up.URL)
	})
	if err != nil {
		return nil, err
	}
	if admin {
		t.admin = "http://" + aaddr
	}
	r.started = append(r.started, t)
	return t, nil
}

// scaleRequest is the chat completion sent to a gateway of s: it asks for
// s.Model(), so the aliases row looks the pool up through an alias.
func scaleRequest(url string, s scaleShape) request {
	return chatRequest(url, false).forModel(s.Model())
}

// scale is the rows of costs that must not grow with the configuration:
// the gateway's CPU per request at the fixed rate with each of
// scaleShapes (interleaved round by round, each a process of its own),
// and a reload of a configuration of a thousand backends and pools under
// that load, with the requests that failed meanwhile.
func (r *runner) scale(ctx context.Context) error {
	if !slices.Contains(r.o.Targets, Switchover) {
		return nil
	}
	shapes := scaleShapes(r.o.ScaleFactor)
	gws := make([]*target, len(shapes))
	for i, s := range shapes {
		r.progress("scale: starting a gateway with %s", s.label)
		t, err := r.startScaled(ctx, s, false)
		if err != nil {
			return err
		}
		defer t.stop()
		gws[i] = t
	}
	rate := fmt.Sprintf("%g req/s", r.o.Rate)
	rows := make([]*Row, len(shapes))
	for i, s := range shapes {
		label := "  with " + s.label
		if i == 0 {
			label = "CPU per request at " + rate + ", us: " + s.label
		}
		rows[i] = r.rep.row("scale_"+s.name, label, "us", 1)
	}
	callers := make([]*caller, len(shapes))
	for i, t := range gws {
		callers[i] = &caller{client: newClient(1024), req: scaleRequest(t.url, shapes[i])}
	}
	perShape := make([][]float64, len(shapes))
	for round := range r.o.Rounds {
		r.progress("scale: %s, round %d of %d", rate, round+1, r.o.Rounds)
		for k := range shapes {
			i := (round + k) % len(shapes)
			t := gws[i]
			cpu0, err := cpuOf(t.pids)
			if err != nil {
				return err
			}
			sum, err := fixedRate(ctx, callers[i], r.o.Rate, r.o.Duration)
			if err != nil {
				return err
			}
			cpu1, err := cpuOf(t.pids)
			if err != nil {
				return err
			}
			r.rep.fail(Switchover, sum.Failed+sum.Dropped)
			if sum.Requests > 0 {
				us := float64((cpu1-cpu0)/time.Microsecond) / float64(sum.Requests)
				rows[i].add(Switchover, us)
				perShape[i] = append(perShape[i], us)
			}
		}
	}
	var ratios []string
	if base := median(perShape[0]); base > 0 {
		for i, s := range shapes[1:] {
			ratios = append(ratios, fmt.Sprintf("%s %.2fx", s.name, median(perShape[i+1])/base))
		}
		r.rep.note("scale: CPU per request against the \"Use it\" config's, medians of %d rounds: %s", r.o.Rounds, strings.Join(ratios, ", "))
	}
	return r.reloadUnderLoad(ctx)
}

// reloadUnderLoad starts a gateway of ReloadBackends backends (each in a
// pool of its own, besides chat-prod) and reloads it through the admin
// API once a round, with one backend's timeout changed and a pool added
// or removed, while requests run at the fixed rate: the time the reload
// took (the admin call's answer) and the requests that failed.
func (r *runner) reloadUnderLoad(ctx context.Context) error {
	n := max(10, int(1000*r.o.ScaleFactor))
	s := scaleShape{"reload", fmt.Sprintf("%d backends", n), scaleconf.Shape{Members: n, Pools: n, Keys: 1}}
	r.progress("scale: starting a gateway with %d backends and %d pools", n, n)
	t, err := r.startScaled(ctx, s, true)
	if err != nil {
		return err
	}
	defer t.stop()
	orig, err := os.ReadFile(t.config)
	if err != nil {
		return err
	}
	took := r.rep.row("reload", fmt.Sprintf("reload of %d backends, %d pools at %g req/s, ms", n, n+1, r.o.Rate), "ms", 1)
	failedRow := r.rep.row("reload_failed", "  requests failed during the reloads", "requests", 0)
	c := &caller{client: newClient(1024), req: chatRequest(t.url, false)}
	failed, sent := 0, 0
	for round := range r.o.Rounds {
		r.progress("scale: reload, round %d of %d", round+1, r.o.Rounds)
		cfg := orig
		if round%2 == 0 {
			last := fmt.Sprintf("region: region-%d\n", n-1)
			cfg = bytes.Replace(orig, []byte(last), []byte(last+"    timeout: 5m\n"), 1)
			cfg = append(cfg, "  - name: pool-added\n    members: [{backend: aoai-0001}]\n"...)
		}
		if err := os.WriteFile(t.config, cfg, 0o600); err != nil {
			return err
		}
		var (
			wg   sync.WaitGroup
			sum  load.Summary
			lerr error
		)
		wg.Go(func() { sum, lerr = fixedRate(ctx, c, r.o.Rate, r.o.Duration) })
		select {
		case <-ctx.Done():
		case <-time.After(r.o.Duration / 3):
		}
		d, rerr := t.reload(ctx)
		wg.Wait()
		if lerr != nil {
			return lerr
		}
		if rerr != nil {
			return rerr
		}
		took.add(Switchover, ms(d))
		failed += sum.Failed + sum.Dropped
		sent += sum.Requests
	}
	failedRow.add(Switchover, float64(failed))
	r.rep.fail(Switchover, failed)
	r.rep.note("reload: %d requests sent across %d reloads of %d backends and %d pools (a backend's timeout changed, a pool added or removed), %d failed; the time is the admin API's POST /admin/reload, its answer (the status of every pool) included",
		sent, r.o.Rounds, n, n+1, failed)
	return ctx.Err()
}

// reload asks t's admin API to reload its configuration file and returns
// the time the call took.
func (t *target) reload(ctx context.Context) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.admin+"/admin/reload", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "application/json")
	began := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(began)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("bench: reload answered %d: %.300s", resp.StatusCode, body)
	}
	return took, nil
}
