package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
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
HEALTHCHECK or a systemd watchdog script; needs no shell. With server.tls,
give an https URL (and -insecure or -cacert; -cert and -key for a
listener that requires client certificates).

Flags:
`)
		fs.PrintDefaults()
	}
	url := fs.String("url", envOr("SWITCHOVER_HEALTH_URL", defaultHealthURL), "endpoint to check (default $SWITCHOVER_HEALTH_URL or http://127.0.0.1:8080/readyz; /healthz for liveness)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	quiet := fs.Bool("q", false, "print nothing on success")
	insecure := fs.Bool("insecure", false, "with https, do not verify the gateway's certificate (a check of this host: no secret is sent)")
	cacert := fs.String("cacert", "", "with https, the CA file (PEM) to verify the gateway's certificate with, instead of the system's")
	cert := fs.String("cert", "", "with https, a client certificate (PEM) to show, for a listener with client_auth: require")
	key := fs.String("key", "", "the key (PEM) of -cert")
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
	tc, err := healthTLS(*insecure, *cacert, *cert, *key)
	if err != nil {
		return usageError{err}
	}
	// No proxy from the environment: the check is about this host.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tc}}
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

// healthTLS is the TLS of an https check: the system's roots, or
// cacert's, or none verified with insecure; a client certificate with
// cert and key.
func healthTLS(insecure bool, cacert, cert, key string) (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: insecure}
	if cacert != "" {
		data, err := os.ReadFile(cacert)
		if err != nil {
			return nil, fmt.Errorf("-cacert: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("-cacert: %s holds no PEM certificate", cacert)
		}
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("-cert and -key go together")
	}
	if cert != "" {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("-cert, -key: %w", err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return tc, nil
}
