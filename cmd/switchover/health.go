package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// defaultHealthURL is the readiness endpoint of a gateway listening on
// :8080, as the container image's configuration does.
const defaultHealthURL = "http://127.0.0.1:8080/readyz"

// healthCommand GETs a health endpoint of a running gateway and succeeds
// only on 200: the container image's HEALTHCHECK, which has no shell or
// curl to run.
func healthCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: switchover health [flags]

GETs the gateway's readiness endpoint (or -url) and exits 0 on 200 ok,
1 otherwise (an error status, no answer within -timeout). For a container
HEALTHCHECK or a systemd watchdog script; needs no shell.

Flags:
`)
		fs.PrintDefaults()
	}
	url := fs.String("url", envOr("SWITCHOVER_HEALTH_URL", defaultHealthURL), "endpoint to check (default $SWITCHOVER_HEALTH_URL or http://127.0.0.1:8080/readyz; /healthz for liveness)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("health takes no arguments, got %q", fs.Args())}
	}
	if *timeout <= 0 {
		return usageError{errors.New("-timeout must be positive")}
	}
	target := *url
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return usageError{err}
	}
	// No proxy from the environment: the check is about this host.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s: %s %s", target, resp.Status, msg)
	}
	if !*quiet {
		fmt.Fprintf(stdout, "%s: %s\n", target, msg)
	}
	return nil
}
