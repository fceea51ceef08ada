package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("c", "", "config file (YAML); none starts the built-in demo")
	listen := fs.String("listen", "", "listen address, overriding the config's listen")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("serve takes no arguments, got %q", fs.Args())}
	}
	if *path == "" {
		return serveDemo(ctx, *listen, stdout, stderr)
	}
	cfg, err := config.Load(*path)
	if err != nil {
		var ps config.Problems
		if errors.As(err, &ps) {
			return configError{err}
		}
		return err
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	announce(g, ln.Addr().String())
	return g.Serve(ctx, ln)
}

// announce logs what the gateway serves.
func announce(g *gateway.Gateway, addr string) {
	lg := g.Logger
	names := make([]string, 0, len(g.Pools))
	for _, pc := range g.Config.Pools {
		names = append(names, pc.Name)
	}
	lg.Info("switchover listening", "addr", addr, "pools", names, "backends", len(g.Backends), "version", version)
	if len(g.Config.Keys) == 0 {
		lg.Warn("no gateway keys are configured: serving without authentication", "addr", addr)
	}
}

func check(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("c", "", "config file to validate (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usageError{errors.New("check needs -c FILE")}
	}
	cfg, err := config.Load(*path)
	if err != nil {
		var ps config.Problems
		if errors.As(err, &ps) {
			return configError{fmt.Errorf("%w\n%d problem(s) in %s", err, len(ps), *path)}
		}
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (%d backends, %d pools, %d keys)\n", *path, len(cfg.Backends), len(cfg.Pools), len(cfg.Keys))
	return nil
}
