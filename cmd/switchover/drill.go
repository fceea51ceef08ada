package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/switchover-gw/switchover/drill"
)

const drillUsage = `Usage: switchover drill spend [flags]

Measures how keys keep to their budgets and shared rate limits, through
real gateways in this process over loopback, in front of a simulated
backend, and prints a table (docs/operations.md, "The spend drill"):

  burst     a key with a budget: 3 small requests, then 16 large at once
  even      8 callers send small requests until the budget refuses them
  replicas  two and three replicas on PostgreSQL, 8 callers each, without
            and with state.redis
  rollout   three replicas sharing a key's rpm through Redis: a rollout, a
            scale-down, a scale-up and a Redis restart, each measured over
            -window

SQLite always; PostgreSQL with -postgres (a throwaway database: the drill
makes keys in it); Redis from -redis, else a redis-server the drill starts
on loopback (-redis-server). About six minutes with every store.

Examples:
  switchover drill spend
  switchover drill spend -postgres "$DATABASE_URL" -markdown
  switchover drill spend -only rollout -window 2m

Flags:
`

func drillCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "spend" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stdout, drillUsage)
			return nil
		}
		return usageError{errors.New(`drill takes one subcommand: spend (see "switchover drill spend -h")`)}
	}
	fs := flag.NewFlagSet("drill spend", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, drillUsage); fs.PrintDefaults() }
	var o drill.Options
	fs.StringVar(&o.Postgres, "postgres", os.Getenv("SWITCHOVER_DRILL_POSTGRES"), "PostgreSQL DSN of a throwaway database (default $SWITCHOVER_DRILL_POSTGRES); empty skips its rows")
	redisURL := fs.String("redis", os.Getenv("SWITCHOVER_DRILL_REDIS"), "Redis URL to use (default $SWITCHOVER_DRILL_REDIS); the drill cannot restart it, so the restart phase is skipped")
	redisBin := fs.String("redis-server", "redis-server", "without -redis, the redis-server binary to start on loopback; empty skips the Redis rows")
	only := fs.String("only", "", "comma-separated scenarios to run: "+strings.Join(drill.Scenarios, ","))
	fs.Float64Var(&o.Budget, "budget", 0.05, "the keys' budget in dollars")
	fs.IntVar(&o.Callers, "callers", 8, "callers per replica in even and replicas")
	fs.IntVar(&o.Burst, "burst", 16, "large requests sent at once in burst")
	fs.IntVar(&o.LargeChars, "large", 40000, "characters of a large request's prompt")
	fs.DurationVar(&o.Latency, "latency", 0, "the simulated backend's median latency (default 300ms)")
	fs.IntVar(&o.RPM, "rpm", 60, "the key's requests per minute in rollout")
	fs.DurationVar(&o.Window, "window", 0, "how long each rollout phase is measured (default 1m)")
	markdown := fs.Bool("markdown", false, "print the tables as Markdown")
	quiet := fs.Bool("q", false, "no progress lines")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("drill spend takes no arguments, got %q", fs.Args())}
	}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
		for _, n := range o.Only {
			if !slices.Contains(drill.Scenarios, n) {
				return usageError{fmt.Errorf("no scenario %q (want some of %s)", n, strings.Join(drill.Scenarios, ","))}
			}
		}
	}
	switch {
	case *redisURL != "":
		o.Redis = drill.ExternalRedis(*redisURL)
	case *redisBin != "":
		srv, err := drill.StartRedis(*redisBin)
		if err != nil {
			fmt.Fprintf(stderr, "drill: no Redis, its rows are skipped: %v\n", err)
			break
		}
		defer srv.Close()
		o.Redis = srv
	}
	if !*quiet {
		o.Progress = stderr
	}
	rep, err := drill.Run(ctx, o)
	if err != nil {
		return err
	}
	if *markdown {
		return drill.WriteMarkdown(stdout, rep)
	}
	return drill.WriteText(stdout, rep)
}
