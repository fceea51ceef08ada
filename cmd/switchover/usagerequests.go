package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchover-gw/switchover/internal/labels"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

const usageRequestsUsage = `Usage: switchover usage requests [flags]

Prints the gateway's request logs: one row per request, newest first,
with its key, team, end user, tags, pool, backend, model, tokens, cost and status:

  switchover usage requests --key-id key_abc --status error
  switchover usage requests --tag prod --from 2026-12-01 --format csv
  switchover usage requests --end-user alice@example.com

Filters: --from/--to, --key-id, --team, --tag, --model, --end-user, --pool,
--backend (any attempt's), --status, --failover yes|no, --cache, --q TEXT.
switchover usage request ID prints one request with its attempts.

A page holds --limit requests (default 100, at most 1000); the table ends
with the command for the next page, JSON has next_cursor. --status takes
a status (429), a class (5xx) or error (400 to 599).
`

// usageRequests runs switchover usage requests.
func usageRequests(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, client := adminFlagSet("usage requests", usageRequestsUsage, stderr)
	params := map[string]*string{
		"from":     fs.String("from", "", "the oldest time, a date such as 2026-12-01 or an RFC 3339 time (default: none)"),
		"to":       fs.String("to", "", "the end, exclusive (default: none)"),
		"key":      fs.String("key-id", "", "only the requests of this key ID"),
		"team":     fs.String("team", "", "only the requests of this team"),
		"tag":      fs.String("tag", "", "only the requests of keys that had this tag"),
		"model":    fs.String("model", "", "only the requests of this model"),
		"end_user": fs.String("end-user", "", "only the requests made for this end user (the request's user field or header)"),
		"status":   fs.String("status", "", "only this status: 429, 5xx or error"),
		"pool":     fs.String("pool", "", "only the requests of this pool"),
		"backend":  fs.String("backend", "", "only the requests that tried this backend (answered by it or failed over from it)"),
		"failover": fs.String("failover", "", "yes: only the requests that failed over; no: only the others"),
		"cache":    fs.String("cache", "", "hit, coalesced, any (answered by the response cache) or none (calls)"),
		"q":        fs.String("q", "", "only the requests whose id, key id, team, pool, model, backend or end user is exactly this"),
		"cursor":   fs.String("cursor", "", "where the last page ended (its next_cursor)"),
	}
	limit := fs.Int("limit", 0, "requests per page, 1 to 1000 (default 100)")
	format := fs.String("format", "table", "table, json or csv")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	q := url.Values{}
	for name, v := range params {
		if *v != "" {
			q.Set(name, *v)
		}
	}
	if err := checkRequestFlags(q, *limit); err != nil {
		return err
	}
	if *limit != 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	raw, err := getFormatted(ctx, client, "/admin/usage/requests", q, *format, stdout)
	if err != nil || raw == nil {
		return err
	}
	var a ledgerapi.Requests
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("admin API: unexpected answer: %v", err)
	}
	return printRequests(stdout, a, args)
}

// checkRequestFlags checks what can be checked here, so that a typo is a
// usage error.
func checkRequestFlags(q url.Values, limit int) error {
	for _, name := range []string{"from", "to"} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		if _, err := time.Parse(time.DateOnly, v); err != nil {
			if _, err := time.Parse(time.RFC3339, v); err != nil {
				return usageError{fmt.Errorf("--%s: %q is neither a date such as 2026-12-01 nor an RFC 3339 time", name, v)}
			}
		}
	}
	if t := q.Get("tag"); t != "" {
		if err := labels.CheckTag(t); err != nil {
			return usageError{fmt.Errorf("--tag: %v", err)}
		}
	}
	if u := q.Get("end_user"); len(u) > ledger.MaxEndUser {
		return usageError{fmt.Errorf("--end-user: %d bytes, longer than any end user kept (%d)", len(u), ledger.MaxEndUser)}
	}
	if f := q.Get("failover"); f != "" && f != "yes" && f != "no" {
		return usageError{fmt.Errorf("--failover: %q is not yes or no", f)}
	}
	switch c := q.Get("cache"); c {
	case "", "hit", "coalesced", "any", "none":
	default:
		return usageError{fmt.Errorf("--cache: %q is not hit, coalesced, any or none", c)}
	}
	if limit < 0 || limit > ledgerapi.MaxRequestsLimit {
		return usageError{fmt.Errorf("--limit: %d is not from 1 to %d", limit, ledgerapi.MaxRequestsLimit)}
	}
	return nil
}

// printRequests prints a page of request logs as a table, and the
// command of the next page (args with the new --cursor).
func printRequests(w io.Writer, a ledgerapi.Requests, args []string) error {
	if len(a.Requests) == 0 {
		fmt.Fprintln(w, "no requests")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "time\trequest id\tkey\tteam\tend user\ttags\tbackend\tmodel\tprompt\tcompletion\tcost USD\tstatus\tfailover")
	for _, r := range a.Requests {
		prompt, completion := strconv.FormatInt(r.PromptTokens, 10), strconv.FormatInt(r.CompletionTokens, 10)
		if r.Estimated {
			prompt, completion = "~"+prompt, "~"+completion
		}
		failover := "-"
		if r.Failover {
			failover = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.6f\t%d\t%s\n", r.Time.UTC().Format(time.RFC3339), r.RequestID,
			dash(r.Key), dash(r.Team), dash(r.EndUser), dash(strings.Join(r.Tags, ",")), dash(r.Backend), dash(r.Model), prompt, completion,
			r.Cost, r.Status, failover)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if a.NextCursor != "" {
		var kept []string
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case a == "--cursor" || a == "-cursor":
				i++
			case strings.HasPrefix(a, "--cursor=") || strings.HasPrefix(a, "-cursor="):
			default:
				kept = append(kept, a)
			}
		}
		fmt.Fprintf(w, "more: switchover usage requests %s--cursor %s\n", joinArgs(kept), a.NextCursor)
	}
	return nil
}

// joinArgs writes args for a shell, each followed by a space; secrets
// (-key) are left out.
func joinArgs(args []string) string {
	var b strings.Builder
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-key" || a == "--key" {
			i++
			continue
		}
		if strings.HasPrefix(a, "-key=") || strings.HasPrefix(a, "--key=") {
			continue
		}
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\*?;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		b.WriteString(a + " ")
	}
	return b.String()
}

const usageRequestUsage = `Usage: switchover usage request [flags] ID

Prints one request of the gateway's request log with its attempts
(backend, status, reason, when each started and how long it took) and
its bodies when its pool or key keeps them (request_log.bodies), their
secrets redacted:

  switchover usage request 9f3c2a1b7e6d5c4b
`

// usageRequest runs switchover usage request ID.
func usageRequest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, client := adminFlagSet("usage request", usageRequestUsage, stderr)
	format := fs.String("format", "table", "table or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return usageError{fmt.Errorf("give one request id (from switchover usage requests)")}
	}
	if *format != "table" && *format != "json" {
		return usageError{fmt.Errorf("--format: %q is not table or json", *format)}
	}
	raw, err := client().call(ctx, "GET", "/admin/usage/requests/"+url.PathEscape(fs.Arg(0)), nil)
	if err != nil {
		return err
	}
	if *format == "json" {
		_, err := stdout.Write(raw)
		return err
	}
	var d ledgerapi.RequestDetail
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("admin API: unexpected answer: %v", err)
	}
	r := d.Request
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	answered := dash(r.Backend)
	if r.Unanswered {
		answered = "none (unanswered)"
	}
	for _, kv := range [][2]string{{"request id", r.RequestID}, {"time", r.Time.UTC().Format(time.RFC3339Nano)},
		{"key", dash(r.Key)}, {"team", dash(r.Team)}, {"end user", dash(r.EndUser)}, {"pool", dash(r.Pool)},
		{"model", dash(r.Model)}, {"answered by", answered}, {"status", strconv.Itoa(r.Status)},
		{"failover", strconv.FormatBool(r.Failover)}, {"hedge", dash(r.Hedge)}, {"cache", dash(r.Cache)},
		{"duration", fmt.Sprintf("%d ms (first byte %d ms)", r.DurationMs, r.FirstByteMs)},
		{"tokens", fmt.Sprintf("%d prompt, %d completion", r.PromptTokens, r.CompletionTokens)},
		{"cost USD", fmt.Sprintf("%.6f", r.Cost)}, {"attempts", fmt.Sprintf("%d (%d kept)", r.Tried, len(r.Attempts))}} {
		fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printAttempts(stdout, r.Attempts); err != nil {
		return err
	}
	return printBodies(stdout, d.Bodies)
}

// printAttempts prints a request's attempts as a table, if it has some.
func printAttempts(stdout io.Writer, attempts []ledger.Attempt) error {
	if len(attempts) == 0 {
		return nil
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tbackend\tstatus\treason\tstart ms\tduration ms\tnote")
	for i, a := range attempts {
		var note []string
		if a.Hedge {
			note = append(note, "hedge")
		}
		if a.Abandoned {
			note = append(note, "abandoned")
		}
		status := "-"
		if a.Status != 0 {
			status = strconv.Itoa(a.Status)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", i+1, a.Backend, status, dash(a.Reason), a.StartMs, a.DurationMs, dash(strings.Join(note, ",")))
	}
	return tw.Flush()
}

// printBodies prints a request's kept bodies, or why there are none.
// Control characters but newlines and tabs are shown escaped (\x1b), so
// that a body cannot drive the terminal.
func printBodies(stdout io.Writer, b ledgerapi.BodiesView) error {
	if !b.Kept {
		_, err := fmt.Fprintf(stdout, "\nbodies: %s\n", b.Note)
		return err
	}
	size := func(n int64, cut bool) string {
		switch {
		case n < 0:
			return "size unknown"
		case cut:
			return fmt.Sprintf("%d bytes, truncated", n)
		}
		return fmt.Sprintf("%d bytes", n)
	}
	fmt.Fprintf(stdout, "\nrequest body (%s):\n%s\n", size(b.RequestSize, b.RequestTruncated), terminalSafe(b.Request))
	fmt.Fprintf(stdout, "\nresponse body (%s):\n%s\n", size(b.ResponseSize, b.ResponseTruncated), terminalSafe(b.Response))
	if b.Note != "" {
		fmt.Fprintf(stdout, "\nnote: %s\n", terminalSafe(b.Note))
	}
	return nil
}

// terminalSafe is s with its control characters, newlines and tabs
// aside, written as Go escapes.
func terminalSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
