package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gameday"
	"github.com/switchover-gw/switchover/gateway"
)

func gamedayCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gameday", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: switchover gameday [flags]

Rehearses regional outages and quota shortages on this machine: for each
scenario, starts simulated regions, runs every setup (a gateway in process
over loopback HTTP, or a client-side strategy) under the same load, and
prints a table per scenario. Eight of the built-in scenarios take a few
minutes together; five measure switchover as shipped in real time, about
seventeen minutes more (-only picks scenarios).

Examples:
  switchover gameday
  switchover gameday -html report.html -markdown report.md
  switchover gameday -only region-outage -realtime
  switchover gameday -only outage-default-timeouts
  switchover gameday -f my-regions.yaml

Flags:
`)
		fs.PrintDefaults()
	}
	file := fs.String("f", "", "scenarios from a YAML file instead of the built-in ones")
	only := fs.String("only", "", "comma-separated scenario names to run")
	realtime := fs.Bool("realtime", false, "run at real durations (five-minute runs: hours in all)")
	htmlOut := fs.String("html", "", "write a self-contained HTML report with plots to this file")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	mdOut := fs.String("markdown", "", "write the tables as Markdown to this file")
	list := fs.Bool("list", false, "list the scenarios and their setups, and exit")
	quiet := fs.Bool("q", false, "no progress lines")
	webhook := fs.String("webhook", "", "also send every run's notifications (failover, failback…) to this webhook URL")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("gameday takes no arguments, got %q", fs.Args())}
	}
	scenarios := gameday.Builtin()
	if *file != "" {
		var err error
		if scenarios, err = gameday.LoadFile(*file); err != nil {
			return configError{err}
		}
	}
	var names []string
	if *only != "" {
		names = strings.Split(*only, ",")
		known := map[string]bool{}
		for _, sc := range scenarios {
			known[sc.Name] = true
		}
		for _, n := range names {
			if !known[n] {
				return usageError{fmt.Errorf("no scenario %q (see -list)", n)}
			}
		}
	}
	if *list {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, sc := range scenarios {
			fmt.Fprintf(tw, "%s\t%s\n", sc.Name, sc.Title)
			for _, st := range sc.Setups {
				fmt.Fprintf(tw, "\t  %s\t%s\n", st.Name, st.Description)
			}
		}
		return tw.Flush()
	}
	opts := gameday.Options{Realtime: *realtime, Only: names, Command: "switchover gameday " + strings.Join(args, " "), Webhook: *webhook,
		Gateway: startGateway}
	if !*quiet {
		opts.Progress = stderr
	}
	rep, err := gameday.Run(ctx, scenarios, opts)
	if err != nil {
		return err
	}
	if err := gameday.WriteText(stdout, rep); err != nil {
		return err
	}
	writers := []struct {
		path  string
		write func(io.Writer, *gameday.Report) error
	}{{*htmlOut, gameday.WriteHTML}, {*jsonOut, gameday.WriteJSON}, {*mdOut, gameday.WriteMarkdown}}
	for _, w := range writers {
		if w.path == "" {
			continue
		}
		var buf bytes.Buffer
		if err := w.write(&buf, rep); err != nil {
			return err
		}
		if err := os.WriteFile(w.path, buf.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", w.path)
	}
	return nil
}

// startGateway is the game day's gateway: the real one, in the process.
func startGateway(cfg *config.Config, ln net.Listener, h gameday.Hooks) (func(), error) {
	return gateway.Start(cfg, ln, gateway.Options{Logger: h.Logger, OnTransition: h.OnTransition, Sinks: h.Sinks, Observer: h.Observer})
}
