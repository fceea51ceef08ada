package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/gateway"
)

// statusCommand prints the gateway's pools and members from its admin API,
// and runs the operator actions: switchover status [action args].
func statusCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: switchover status [flags] [action]

Prints every pool with its members: priority, weight, breaker state and time
left, drain, health probe, model version, and the active set; then the
recent events. With an action, changes the running gateway first:

  drain BACKEND                 no new traffic to BACKEND (in-flight finish)
  restore BACKEND               undo drain
  open BACKEND [DURATION]       force BACKEND's breaker open (default: its trip)
  close BACKEND                 force BACKEND's breaker closed
  set POOL BACKEND PRIO [WEIGHT]  change a member's priority (and weight)
  reset POOL BACKEND            back to the configured priority and weight
  reload                        reload the configuration file

Flags:
`)
		fs.PrintDefaults()
	}
	addr := fs.String("admin", envOr("SWITCHOVER_ADMIN", "http://127.0.0.1:8081"), "admin API base URL (default $SWITCHOVER_ADMIN or http://127.0.0.1:8081)")
	key := fs.String("key", os.Getenv("SWITCHOVER_ADMIN_KEY"), "admin key (default $SWITCHOVER_ADMIN_KEY)")
	as := fs.String("as", os.Getenv("USER"), "who takes the action, recorded with it in the gateway's events (default $USER)")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	events := fs.Int("events", 10, "recent events to print")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	base := strings.TrimSuffix(*addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	method, path, body, err := statusAction(fs.Args())
	if err != nil {
		return usageError{err}
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if *key != "" {
		req.Header.Set("Authorization", "Bearer "+*key)
	}
	if *as != "" {
		req.Header.Set(gateway.ActorHeader, *as)
	}
	if method == http.MethodPost {
		// The admin API takes only JSON on POST, so that no web page can
		// post to it (a cross-site form cannot send this type).
		req.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("admin API at %s: %w", base, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("admin API: %s: %s", resp.Status, apiMessage(raw))
	}
	if *asJSON {
		_, err := stdout.Write(raw)
		return err
	}
	var st gateway.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("admin API: unexpected answer: %v", err)
	}
	printStatus(stdout, st, *events)
	return nil
}

// statusAction turns the action arguments into an admin API call.
func statusAction(args []string) (method, path string, body []byte, err error) {
	if len(args) == 0 {
		return http.MethodGet, "/admin/status", nil, nil
	}
	need := func(n int) error {
		if len(args) < n {
			return fmt.Errorf("%s needs %d argument(s)", args[0], n-1)
		}
		return nil
	}
	switch args[0] {
	case "drain", "restore":
		if err := need(2); err != nil {
			return "", "", nil, err
		}
		return http.MethodPost, "/admin/backends/" + args[1] + "/" + args[0], nil, nil
	case "open", "close":
		if err := need(2); err != nil {
			return "", "", nil, err
		}
		b := map[string]string{"state": map[string]string{"open": "open", "close": "closed"}[args[0]]}
		if len(args) > 2 {
			if _, err := time.ParseDuration(args[2]); err != nil {
				return "", "", nil, fmt.Errorf("%q is not a duration such as 5m", args[2])
			}
			b["for"] = args[2]
		}
		j, _ := json.Marshal(b)
		return http.MethodPost, "/admin/backends/" + args[1] + "/breaker", j, nil
	case "set":
		if err := need(4); err != nil {
			return "", "", nil, err
		}
		var prio, weight int
		if _, err := fmt.Sscan(args[3], &prio); err != nil || prio < 1 {
			return "", "", nil, fmt.Errorf("priority %q must be 1 or more", args[3])
		}
		if len(args) > 4 {
			if _, err := fmt.Sscan(args[4], &weight); err != nil || weight < 1 {
				return "", "", nil, fmt.Errorf("weight %q must be 1 or more", args[4])
			}
		}
		j, _ := json.Marshal(map[string]int{"priority": prio, "weight": weight})
		return http.MethodPost, "/admin/pools/" + args[1] + "/members/" + args[2], j, nil
	case "reset":
		if err := need(3); err != nil {
			return "", "", nil, err
		}
		return http.MethodPost, "/admin/pools/" + args[1] + "/members/" + args[2] + "/reset", nil, nil
	case "reload":
		return http.MethodPost, "/admin/reload", nil, nil
	}
	return "", "", nil, errors.New("unknown action " + args[0] + " (see switchover status -h)")
}

func printStatus(w io.Writer, st gateway.Status, events int) {
	for i, p := range st.Pools {
		if i > 0 {
			fmt.Fprintln(w)
		}
		active := strings.Join(p.Active, ", ")
		if active == "" {
			active = "none"
		}
		fmt.Fprintf(w, "pool %s  active: %s", p.Name, active)
		switch {
		case p.ActiveSince.IsZero():
		case p.ActiveSinceStart:
			fmt.Fprintf(w, " (since start, %s; earlier unknown)", p.ActiveSince.UTC().Format(time.RFC3339))
		default:
			fmt.Fprintf(w, " (since %s)", p.ActiveSince.UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  backend\ttype\tregion\tprio\tweight\tbreaker\tprobe\tmodel\t")
		for _, m := range p.Members {
			br := m.Breaker.State
			if m.Breaker.State == "open" {
				br += fmt.Sprintf(" (%s left)", (time.Duration(m.Breaker.LeftMS) * time.Millisecond).Round(time.Second))
			}
			if m.Breaker.Failures > 0 && m.Breaker.State == "closed" {
				br += fmt.Sprintf(" (%d failures)", m.Breaker.Failures)
			}
			if m.Drained {
				br += ", DRAINED"
			}
			prio := fmt.Sprint(m.Priority)
			if m.Overridden {
				prio += "*"
			}
			probe := "-"
			if m.Probe != nil {
				probe = "up"
				if !m.Probe.Up {
					probe = "DOWN: " + m.Probe.Result
				}
			}
			model := m.ModelVersion
			if model == "" {
				model = "-"
			}
			region := m.Region
			if region == "" {
				region = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", m.Backend, m.Type, region, prio, m.Weight, br, probe, model)
		}
		tw.Flush()
	}
	if f := st.Fleet; f != nil {
		store := "shared state store up"
		if !f.StoreUp {
			store = "shared state store UNREACHABLE: each replica decides alone"
		}
		if f.PendingActions > 0 {
			store += fmt.Sprintf("; %d operator action(s) taken here wait for it, to reach the other replicas", f.PendingActions)
		}
		fmt.Fprintf(w, "\nfleet (this replica: %s; %s)\n", f.Replica, store)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  replica	version	started	last seen	in flight	")
		rs := slices.Clone(f.Replicas)
		slices.SortFunc(rs, func(a, b fleet.ReplicaStatus) int { return strings.Compare(a.ID, b.ID) })
		for _, r := range rs {
			var inflight []string
			for b, n := range r.InFlight {
				inflight = append(inflight, fmt.Sprintf("%s=%d", b, n))
			}
			slices.Sort(inflight)
			fl := strings.Join(inflight, " ")
			if fl == "" {
				fl = "-"
			}
			ver := r.Version
			if ver == "" {
				ver = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s ago\t%s\t\n", r.ID, ver, r.Started.UTC().Format(time.RFC3339),
				st.At.Sub(r.Seen).Round(100*time.Millisecond), fl)
		}
		tw.Flush()
	}
	if s := st.Store; s != nil {
		up := "up"
		if !s.Up {
			up = "FAILING: known keys keep working, usage waits in the buffer"
		}
		fmt.Fprintf(w, "\nstore %s %s; %d keys, %d usage records buffered, %d dropped\n", s.Kind, up, s.Keys, s.Buffered, s.Dropped)
	}
	if n := len(st.Events); n > 0 && events > 0 {
		fmt.Fprintln(w, "\nrecent events:")
		for _, e := range st.Events[max(0, n-events):] {
			subject := eventSubject(e)
			if e.Replica != "" {
				subject += " @" + e.Replica
			}
			fmt.Fprintf(w, "  %s  %-22s %-20s %s\n", e.At.UTC().Format("15:04:05"), e.Kind, subject, e.Detail)
		}
	}
}

// eventSubject is what an event is about: its pool and backend, either,
// or "-". A breaker event's detail ("closed -> open: 3 failures in 30s")
// does not name its backend, so the line must.
func eventSubject(e gateway.Event) string {
	switch {
	case e.Pool != "" && e.Backend != "":
		return e.Pool + "/" + e.Backend
	case e.Backend != "":
		return e.Backend
	case e.Pool != "":
		return e.Pool
	}
	return "-"
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
