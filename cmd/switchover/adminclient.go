package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/gateway"
)

// adminClient calls a running gateway's admin API, for the keys, teams
// and usage commands.
type adminClient struct {
	base string // scheme://host:port, no trailing slash
	key  string // admin key; "" sends none
	as   string // the operator, sent in X-Switchover-Actor; "" sends none
}

// adminFlags adds -admin and -key to fs, with the defaults of switchover
// status, and returns a function that builds the client once fs is parsed.
func adminFlags(fs *flag.FlagSet) func() *adminClient {
	addr := fs.String("admin", envOr("SWITCHOVER_ADMIN", "http://127.0.0.1:8081"), "admin API base URL (default $SWITCHOVER_ADMIN or http://127.0.0.1:8081)")
	key := fs.String("key", os.Getenv("SWITCHOVER_ADMIN_KEY"), "admin key (default $SWITCHOVER_ADMIN_KEY)")
	as := fs.String("as", os.Getenv("USER"), "who takes the action, recorded with it in the gateway's events (default $USER)")
	return func() *adminClient {
		base := strings.TrimSuffix(*addr, "/")
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
		return &adminClient{base: base, key: *key, as: *as}
	}
}

// call sends body (nil: none) as JSON and returns the answer of a 2xx
// status; any other status is an error carrying the API's message.
func (c *adminClient) call(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.as != "" {
		req.Header.Set(gateway.ActorHeader, c.as)
	}
	if method != http.MethodGet {
		// The admin API takes only JSON on POST, so that no web page can
		// post to it; send the type on every change, body or not.
		req.Header.Set("Content-Type", "application/json")
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("admin API: %s: %s", resp.Status, apiMessage(raw))
	}
	return raw, nil
}

// apiMessage is the message of an admin API error,
// {"error":{"message":"..."}}; also {"error":"..."}, as gateways before
// 2026-12 answered their status and actions; or else the body itself.
func apiMessage(raw []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && len(e.Error) > 0 {
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
		var m struct{ Message string }
		if json.Unmarshal(e.Error, &m) == nil && m.Message != "" {
			return m.Message
		}
	}
	return strings.TrimSpace(string(raw))
}

// parseWithArg parses a subcommand's flags around its one positional
// argument (an ID, a team name), which may come before, between or after
// them: "keys update key_x --rpm 5", "keys update --rpm 5 key_x".
func parseWithArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return "", err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) == 0 {
		return "", usageError{fmt.Errorf("%s needs %s", fs.Name(), what)}
	}
	if len(pos) > 1 {
		return "", usageError{fmt.Errorf("%s takes %s only, not also %q", fs.Name(), what, strings.Join(pos[1:], " "))}
	}
	return pos[0], nil
}

// noArgs refuses positional arguments after a subcommand's flags.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, not %q", fs.Name(), strings.Join(fs.Args(), " "))}
	}
	return nil
}
