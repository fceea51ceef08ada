package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchover-gw/switchover/internal/keytext"
	"github.com/switchover-gw/switchover/internal/labels"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

const usageUsage = `Usage: switchover usage [flags]

Prints requests, tokens and cost from the gateway's store over a period
(default: from the start of this month to the end of today, UTC), grouped
by any of key, team, pool, backend, model, day, hour, tag and end_user:

  switchover usage --by team,day
  switchover usage --from 2026-12-01T06:00:00Z --to 2026-12-01T12:00:00Z --by hour
  switchover usage --by key --by team
  switchover usage --from 2026-11-01 --to 2026-12-01 --by backend --format csv

--from and --to take a date (UTC midnight) or an RFC 3339 time; --to is
exclusive: --from 2026-11-01 --to 2026-12-01 is November. --key-id,
--team and --tag keep one key's, team's or tag's usage, --end-user one end
user's (the request's "user", metadata.user_id or x-switchover-end-user
header; by end user, the store sums its requests rather than its daily
totals; so does --by hour, which gives a row an hour: give it a short
period).

switchover usage requests prints the request logs, one row per request
(see switchover usage requests -h). By tag, a request
counts under each tag its key had then (under "-" without any). -key is the admin key, as in every
command.
`

// usageCommand runs switchover usage.
func usageCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "requests" {
		return usageRequests(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "request" {
		return usageRequest(ctx, args[1:], stdout, stderr)
	}
	fs, client := adminFlagSet("usage", usageUsage, stderr)
	from := fs.String("from", "", "start, a date such as 2026-12-01 or an RFC 3339 time (default: the 1st of this month)")
	to := fs.String("to", "", "end, exclusive (default: tomorrow, UTC)")
	var by listFlag
	fs.Var(&by, "by", "grouping: key, team, pool, backend, model, day, hour, tag, end_user; comma-separated or repeated (default: one total)")
	// Not -key, which is the admin key in every command (and must not end
	// up in a URL).
	key := fs.String("key-id", "", "only the usage of this key ID")
	team := fs.String("team", "", "only the usage of this team")
	tag := fs.String("tag", "", "only the usage of keys that had this tag")
	endUser := fs.String("end-user", "", "only the usage of this end user")
	format := fs.String("format", "table", "table, json or csv")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	q := url.Values{}
	for name, v := range map[string]string{"from": *from, "to": *to} {
		if v == "" {
			continue
		}
		if _, err := time.Parse(time.DateOnly, v); err != nil {
			if _, err := time.Parse(time.RFC3339, v); err != nil {
				return usageError{fmt.Errorf("--%s: %q is neither a date such as 2026-12-01 nor an RFC 3339 time", name, v)}
			}
		}
		q.Set(name, v)
	}
	groups := by.list
	groupings := ledgerapi.Groupings()
	for _, g := range groups {
		if !slices.Contains(groupings, g) {
			return usageError{fmt.Errorf("--by: %q is not one of %s", g, strings.Join(groupings, ", "))}
		}
	}
	if len(groups) > 0 {
		q.Set("by", strings.Join(groups, ","))
	}
	if *key != "" {
		q.Set("key", *key)
	}
	if *team != "" {
		q.Set("team", *team)
	}
	if *tag != "" {
		if err := labels.CheckTag(*tag); err != nil {
			return usageError{fmt.Errorf("--tag: %v", err)}
		}
		q.Set("tag", *tag)
	}
	if *endUser != "" {
		q.Set("end_user", *endUser)
	}
	raw, err := getFormatted(ctx, client, "/admin/usage", q, *format, stdout)
	if err != nil || raw == nil {
		return err
	}
	var u ledgerapi.Usage
	if err := json.Unmarshal(raw, &u); err != nil {
		return fmt.Errorf("admin API: unexpected answer: %v", err)
	}
	return printUsage(stdout, u)
}

// printUsage prints u as a table: the grouping columns, the sums, and a
// total line.
func printUsage(w io.Writer, u ledgerapi.Usage) error {
	fmt.Fprintf(w, "usage from %s to %s\n", formatBound(u.From), formatBound(u.To))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	cols := slices.Clone(u.By)
	if len(cols) == 0 {
		cols = []string{""}
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\trequests\tfailovers\tprompt\tcompletion\tcached\treasoning\tcost USD")
	sums := func(r ledger.SpendRow) string {
		return fmt.Sprintf("%d\t%d\t%d\t%d\t%d\t%d\t%.6f", r.Requests, r.Failovers, r.PromptTokens,
			r.CompletionTokens, r.CachedTokens, r.ReasoningTokens, r.Cost)
	}
	if len(u.By) > 0 {
		for _, r := range u.Rows {
			var g []string
			for _, b := range u.By {
				g = append(g, dash(ledgerapi.Group(r, b)))
			}
			fmt.Fprintln(tw, strings.Join(g, "\t")+"\t"+sums(r))
		}
	}
	total := make([]string, len(cols))
	total[0] = "total"
	fmt.Fprintln(tw, strings.Join(total, "\t")+"\t"+sums(u.Total))
	return tw.Flush()
}

// formatBound writes a period's bound as a date when it is a UTC midnight.
func formatBound(t time.Time) string {
	t = t.UTC()
	if t.Equal(t.Truncate(24 * time.Hour)) {
		return t.Format(time.DateOnly)
	}
	return t.Format(time.RFC3339)
}

// listFlag is a flag that may be repeated, each value a comma-separated
// list: --by key,team and --by key --by team give the same list, in
// order, each name once.
type listFlag struct{ list []string }

func (f *listFlag) String() string { return strings.Join(f.list, ",") }

func (f *listFlag) Set(v string) error {
	for _, s := range keytext.List(v) {
		if !slices.Contains(f.list, s) {
			f.list = append(f.list, s)
		}
	}
	return nil
}

// getFormatted asks the admin API for GET path with the query q in format
// (table, json or csv; any other is a usage error). A JSON or CSV answer
// is written to stdout as it came and nil returned; for a table, the
// JSON answer to print is returned.
func getFormatted(ctx context.Context, client func() *adminClient, path string, q url.Values, format string, stdout io.Writer) ([]byte, error) {
	switch format {
	case "table":
	case "json", "csv":
		q.Set("format", format)
	default:
		return nil, usageError{fmt.Errorf("--format: %q is not table, json or csv", format)}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	raw, err := client().call(ctx, http.MethodGet, path, nil)
	switch {
	case err != nil:
		return nil, err
	case format != "table":
		_, err := stdout.Write(raw)
		return nil, err
	}
	return raw, nil
}
