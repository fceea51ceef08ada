package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/switchover-gw/switchover/fleet/redisstore"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/engine"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/memlimit"
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
	// The shared store's outages are the gateway's to report, once each,
	// not the Redis client's, once per failed dial.
	redisstore.DiscardClientLog()
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
		// The flag meets the rules the file's listen does (no keys: loopback
		// only), so serve never binds what check would refuse.
		cfg.Listen = *listen
		if err := cfg.Validate(*path + " with -listen " + *listen); err != nil {
			var ps config.Problems
			errors.As(err, &ps)
			return configError{fmt.Errorf("%w\n%d problem(s)", err, len(ps))}
		}
	}
	g, err := gateway.New(cfg, gateway.Options{Path: *path, LogOutput: stderr, Version: version})
	if err != nil {
		return err
	}
	ln, admin, err := gateway.Listen(cfg)
	if err != nil {
		g.Close(context.Background())
		return err
	}
	announce(g, ln, admin)
	if limit, ok := memlimit.Set(os.Getenv, "/sys/fs/cgroup"); ok {
		g.Logger.Info("soft memory limit set to 90% of the container's (GOMEMLIMIT overrides it)", "bytes", limit)
	}
	// SIGHUP reloads the file; so does a change of its content when
	// reload.watch is on. An invalid file keeps the configuration in force.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				g.Logger.Info("SIGHUP: reloading the configuration", "file", *path)
				g.ReloadFile()
			}
		}
	}()
	if *cfg.Reload.Watch {
		go g.Watch(ctx)
	}
	return g.Serve(ctx, ln, admin)
}

// announce logs what the gateway serves.
func announce(g *gateway.Gateway, ln, admin net.Listener) {
	lg := g.Logger
	cfg := g.Config()
	names := make([]string, 0, len(cfg.Pools))
	for _, pc := range cfg.Pools {
		names = append(names, pc.Name)
	}
	addr := ln.Addr().String()
	lg.Info("switchover listening", "addr", addr, "tls", cfg.Server.TLS != nil, "pools", names, "backends", len(cfg.Backends), "version", version)
	if admin != nil {
		lg.Info("admin API listening", "addr", admin.Addr().String(), "tls", cfg.Admin.TLS != nil)
	}
	if !g.Handler.KeysRequired() { // keys of the file, or a store, which holds keys
		lg.Warn("no gateway keys are configured: serving without authentication", "addr", addr)
	}
}

func check(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("c", "", "config file to validate (required)")
	against := fs.String("against", "", "the configuration in force: also list the changes a reload to -c would not apply")
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
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	for _, b := range cfg.Backends {
		if p, ok := config.LookupPreset(b.Preset); ok {
			fmt.Fprintln(stdout, p.Line(b))
		}
	}
	if *against != "" {
		running, err := config.Load(*against)
		if err != nil {
			return fmt.Errorf("-against %s: %w", *against, err)
		}
		for _, name := range engine.RestartOnly(running, cfg) {
			fmt.Fprintf(stdout, "restart needed: %s changed; a reload does not apply it\n", name)
		}
	}
	fmt.Fprintf(stdout, "%s: ok (%s, %s, %s)\n", *path, count(len(cfg.Backends), "backend"), count(len(cfg.Pools), "pool"), count(len(cfg.Keys), "key"))
	return nil
}

// count renders n things: "1 key", "2 keys", "0 keys".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
