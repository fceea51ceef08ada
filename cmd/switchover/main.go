// Command switchover is an LLM failover gateway: one OpenAI-compatible
// endpoint in front of pools of Azure OpenAI, OpenAI and compatible
// backends, with a circuit breaker per backend and retries that move to
// another backend.
//
// Usage:
//
//	switchover serve [-c switchover.yaml]   run the gateway (no config: a demo)
//	switchover check -c switchover.yaml     validate a config, one line per problem
//	switchover sim [-c sim.yaml | flags]    run simulated LLM regions
//	switchover load [flags]                 drive load, report success and latency
//	switchover gameday [flags]              rehearse outages, compare setups
//	switchover drill spend [flags]          measure budgets and shared limits
//	switchover bench [flags]                the gateway's costs next to nginx, side by side
//	switchover status [action]              pools and breakers of a running gateway
//	switchover keys create|list|show|update|rotate|revoke  virtual keys in the store
//	switchover teams list|set               teams' limits and budgets
//	switchover usage [flags]                requests, tokens and cost by key, team, day…
//	switchover usage requests [flags]       one row per request (the spend logs)
//	switchover usage request ID             one request with its attempts
//	switchover health [-url URL]            exit 0 if the gateway answers ready
//	switchover version [-json]              version, commit, build time, Go
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK     = 0
	exitError  = 1 // the command failed while running
	exitUsage  = 2 // bad flags or arguments
	exitConfig = 3 // the configuration is invalid
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// usageError marks an error that is the caller's fault.
type usageError struct{ error }

// flagError is a usageError the flag package has already printed, with
// the command's usage.
type flagError struct{ error }

// parseFlags parses args, turning a bad flag into a flagError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return flagError{err}
	}
	return err
}

// configError marks an invalid configuration.
type configError struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], stdout, stderr)
	case "check":
		err = check(args[1:], stdout, stderr)
	case "sim":
		err = simCommand(ctx, args[1:], stdout, stderr)
	case "load":
		err = loadCommand(ctx, args[1:], stdout, stderr)
	case "gameday":
		err = gamedayCommand(ctx, args[1:], stdout, stderr)
	case "drill":
		err = drillCommand(ctx, args[1:], stdout, stderr)
	case "bench":
		err = benchCommand(ctx, args[1:], stdout, stderr)
	case "status":
		err = statusCommand(ctx, args[1:], stdout, stderr)
	case "keys":
		err = keysCommand(ctx, args[1:], stdout, stderr)
	case "teams":
		err = teamsCommand(ctx, args[1:], stdout, stderr)
	case "usage":
		err = usageCommand(ctx, args[1:], stdout, stderr)
	case "health":
		err = healthCommand(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		err = versionCommand(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
	default:
		fmt.Fprintf(stderr, "switchover: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	var ue usageError
	var fe flagError
	var ce configError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &fe):
		return exitUsage
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "switchover:", err)
		return exitUsage
	case errors.As(err, &ce):
		fmt.Fprintln(stderr, err)
		return exitConfig
	default:
		fmt.Fprintln(stderr, "switchover:", err)
		return exitError
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `switchover: an LLM failover gateway

Usage:
  switchover serve [-c switchover.yaml]   run the gateway; with no config, a demo in
                                          front of three simulated regions
  switchover check -c switchover.yaml     validate a config and print each problem
                                          with its line
  switchover sim [-c sim.yaml | flags]    run simulated LLM regions (quotas, faults)
  switchover load [flags]                 send load at a fixed rate or from N callers and
                                          report success, latency, goodput, failovers
  switchover gameday [flags]              rehearse outages and quota shortages on
                                          simulated regions; compare setups; HTML report
  switchover drill spend [flags]          measure budgets and shared rate limits through
                                          gateways in process: bursts, replicas, rollouts
  switchover bench [-quick] [flags]       measure the gateway next to nginx and a bare Go
                                          proxy: req/s, CPU, syscalls, allocations,
                                          latency, streams, memory (docs/performance.md)
  switchover status [-admin URL] [action] the running gateway's pools, breakers and
                                          events; drain, restore, open, close, set,
                                          reset, reload
  switchover keys SUBCOMMAND              virtual keys in the store: create, list, show,
                                          update, rotate, revoke (secrets shown once)
  switchover teams list|set NAME          teams' shared limits and budgets
  switchover usage [--by team,day]        requests, tokens and cost by key, team, pool,
                                          backend, model, day, tag; table, JSON or CSV
  switchover usage requests [filters]     one row per request (the spend logs), paged
  switchover usage request ID             one request of the log with its attempts
  switchover health [-url URL]            GET the readiness endpoint; exit 0 on 200
                                          (a container HEALTHCHECK without a shell)
  switchover version [-json]              print the version, commit, build time and Go

Run "switchover COMMAND -h" for a command's flags.
`)
}
