package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/internal/keytext"
	"github.com/switchover-gw/switchover/internal/labels"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

const keysUsage = `Usage: switchover keys SUBCOMMAND [flags]

Virtual keys kept in the gateway's store, through its admin API:

  create --name NAME [limits]   a new key; prints its secret once
  list                          every key: the store's and the config file's
  show ID                       one key
  update ID [limits]            change the limits given; the others stay
  rotate [--grace 10m] ID       a new secret, printed once; the old one stops working
                                at once, or after the grace
  revoke ID                     the key stops working for good

Limits (create and update):
  --name NAME             a label for people (required on create)
  --team TEAM             the team whose limits and budget also apply
  --pools P1,P2           pools the key may use (default all; "" clears)
  --models M1,M2          models the key may ask for (default all; "" clears)
  --rpm N, --tpm N        requests and tokens per minute: 600, 200k, 1.5m (0: unlimited)
  --max-concurrent N      requests in flight (0: unlimited)
  --budget AMOUNT/PERIOD  USD per period: 50/month, 5/day, 5/1h, 100/30d (none: no budget)
  --soft-budget USD       alert (a budget notification) when spend reaches it; refuses nothing
  --pool-budgets P=B,...  budgets of one pool each: o3=5/day,gpt4o=10/1h (none: no such budgets)
  --expires WHEN          90d or 36h from now, or an RFC 3339 time (never: no expiry)
  --patience WAIT         the key's default wait for quota: 30s, 2m (none: the pool's)
  --cache SETTINGS        the key's own response cache, winning over its pools':
                          ttl=10m,coalesce=on,max_wait=5s,max_entry=1MiB (each optional;
                          coalesce=off without ttl: no cache for the key; none: its pools')
  --request-log SETTINGS  the key's own request log, winning over its pools':
                          bodies=on,max_body_bytes=64KiB (each optional; bodies=off: none
                          of its bodies whatever its pools say; none: its pools')
  --tag TAG               a tag, for spend by tag; repeat for several (on update they
                          replace the key's; --tag "" removes them)
  --meta NAME=VALUE       free-form metadata; repeat for several (on update it replaces
                          the key's; --meta "" removes it)

list --tag TAG shows the keys with that tag (repeat: with every one).

Every subcommand takes -admin URL (default $SWITCHOVER_ADMIN or
http://127.0.0.1:8081), -key KEY (default $SWITCHOVER_ADMIN_KEY) and -json
(print the admin API's answer).
`

// keysCommand runs switchover keys SUBCOMMAND.
func keysCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, keysUsage)
		return usageError{errors.New("keys needs a subcommand: create, list, show, update, rotate or revoke")}
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "create":
		return keysCreate(ctx, args, stdout, stderr)
	case "update":
		return keysUpdate(ctx, args, stdout, stderr)
	case "list":
		return keysList(ctx, args, stdout, stderr)
	case "show", "rotate", "revoke":
		return keysAction(ctx, sub, args, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, keysUsage)
		return nil
	}
	fmt.Fprint(stderr, keysUsage)
	return usageError{fmt.Errorf("keys: unknown subcommand %q", sub)}
}

// subFlags is the flag set of a subcommand of keys or teams, with -admin,
// -key and -json.
func subFlags(name, usage string, stderr io.Writer) (*flag.FlagSet, func() *adminClient, *bool) {
	fs, client := adminFlagSet(name, usage, stderr)
	return fs, client, fs.Bool("json", false, "print the admin API's JSON answer")
}

// adminFlagSet is the flag set of a command that calls the admin API,
// with -admin and -key.
func adminFlagSet(name, usage string, stderr io.Writer) (*flag.FlagSet, func() *adminClient) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage, "\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs, adminFlags(fs)
}

// keyFlags are the limits of keys create and update.
type keyFlags struct {
	fs                                                *flag.FlagSet
	name, team, pools, models, rpm, tpm, conc, budget *string
	expires, patience, soft, poolBudgets, cache       *string
	requestLog                                        *string
	tags                                              listFlag
	meta                                              metaFlag
}

func addKeyFlags(fs *flag.FlagSet) *keyFlags {
	kf := &keyFlags{
		fs:          fs,
		name:        fs.String("name", "", "a label for people, such as the team or application"),
		team:        fs.String("team", "", "the team whose limits and budget also apply"),
		pools:       fs.String("pools", "", "comma-separated pools the key may use (empty: all)"),
		models:      fs.String("models", "", "comma-separated models the key may ask for (empty: all)"),
		rpm:         fs.String("rpm", "", "requests per minute: 600, 1.5k (0: unlimited)"),
		tpm:         fs.String("tpm", "", "tokens per minute: 200k, 1m (0: unlimited)"),
		conc:        fs.String("max-concurrent", "", "requests in flight (0: unlimited)"),
		budget:      fs.String("budget", "", "USD per period: 50/month, 5/day, 5/1h, 100/30d (none: no budget)"),
		poolBudgets: fs.String("pool-budgets", "", "budgets of one pool each: o3=5/day,gpt4o=10/1h (none: no budgets of a pool)"),
		soft:        fs.String("soft-budget", "", "USD per the budget's period at which a budget alert goes out; refuses nothing (none: the alert at 80%)"),
		expires:     fs.String("expires", "", "90d or 36h from now, or an RFC 3339 time (never: no expiry)"),
		patience:    fs.String("patience", "", "the key's default wait for quota: 30s, 2m (none: the pool's)"),
		cache:       fs.String("cache", "", "the key's own response cache: ttl=10m,coalesce=on,max_wait=5s,max_entry=1MiB (none: its pools')"),
		requestLog:  fs.String("request-log", "", "the key's own request log: bodies=on,max_body_bytes=64KiB (none: its pools')"),
	}
	fs.Var(&kf.tags, "tag", "a tag of the key; repeat for several (\"\": none)")
	fs.Var(&kf.meta, "meta", "metadata NAME=VALUE; repeat for several (\"\": none)")
	return kf
}

// body is the admin API body of the flags given on the command line,
// checked here so that a typo is a usage error.
func (kf *keyFlags) body() (map[string]any, error) {
	b := map[string]any{}
	var err error
	kf.fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		v := strings.TrimSpace(f.Value.String())
		switch f.Name {
		case "name", "team":
			b[f.Name] = v
		case "pools", "models":
			b[f.Name] = keytext.List(v)
		case "rpm", "tpm", "max-concurrent":
			if _, e := config.ParseCount(v); e != nil {
				err = fmt.Errorf("--%s: %v", f.Name, e)
			}
			b[strings.ReplaceAll(f.Name, "-", "_")] = v
		case "budget":
			if v != "" && v != "0" && !strings.EqualFold(v, "none") {
				if _, e := config.ParseBudget(v); e != nil {
					err = fmt.Errorf("--budget: %v", e)
				}
			}
			b["budget"] = v
		case "pool-budgets":
			var bs []map[string]string
			if bs, err = keytext.ParsePoolBudgets(v); err != nil {
				err = fmt.Errorf("--pool-budgets: %v", err)
			}
			b["budgets"] = bs
		case "soft-budget":
			if err = checkDollars(v); err != nil {
				err = fmt.Errorf("--soft-budget: %v", err)
			}
			b["soft_budget"] = v
		case "expires":
			if err = checkExpires(v); err != nil {
				err = fmt.Errorf("--expires: %v", err)
			}
			b["expires"] = v
		case "tag":
			tags, e := labels.Tags(kf.tags.list)
			if e != nil {
				err = fmt.Errorf("--tag: %v", e)
			}
			b["tags"] = append([]string{}, tags...)
		case "meta":
			if e := labels.Metadata(kf.meta.m); e != nil {
				err = fmt.Errorf("--meta: %v", e)
			}
			b["metadata"] = kf.meta.m
		case "patience":
			if v != "" && !strings.EqualFold(v, "none") {
				if d, e := time.ParseDuration(v); e != nil || d < 0 {
					err = fmt.Errorf("--patience: %q is not a wait such as 30s or 2m", v)
				}
			}
			b["patience"] = v
		case "cache":
			p, e := cachepolicy.Parse(v)
			if e != nil {
				err = fmt.Errorf("--cache: %v", e)
			}
			b["cache"] = p // nil: null, the pools' cache
		case "request-log":
			l, e := keytext.ParseRequestLog(v)
			if e != nil {
				err = fmt.Errorf("--request-log: %v", e)
			}
			b["request_log"] = l // nil: null, the pools' setting
		}
	})
	if err != nil {
		return nil, usageError{err}
	}
	return b, nil
}

// checkDollars checks an amount of US dollars ("40", "$40"), or "" or
// "none" for none.
func checkDollars(v string) error {
	if v == "" || strings.EqualFold(v, "none") {
		return nil
	}
	if f, err := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64); err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("%q is not an amount of US dollars such as 40", v)
	}
	return nil
}

func checkExpires(v string) error {
	if v == "" || strings.EqualFold(v, "never") {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, v); err == nil {
		return nil
	}
	if _, err := config.ParseAge(v); err != nil {
		return fmt.Errorf("%q is neither a time from now such as 90d or 36h nor an RFC 3339 time", v)
	}
	return nil
}

type keyAnswer struct {
	Key    ledgerapi.KeyView `json:"key"`
	Secret string            `json:"secret"`
}

func keysCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, client, asJSON := subFlags("keys create", "Usage: switchover keys create --name NAME [limits]\n\nCreates a key and prints its secret, once.\n", stderr)
	kf := addKeyFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if strings.TrimSpace(*kf.name) == "" {
		return usageError{errors.New("keys create needs --name (a label for people, such as the team or application)")}
	}
	body, err := kf.body()
	if err != nil {
		return err
	}
	raw, err := client().call(ctx, http.MethodPost, "/admin/keys", body)
	if err != nil {
		return err
	}
	return printKeyAnswer(stdout, raw, *asJSON, "created")
}

func keysUpdate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, client, asJSON := subFlags("keys update", "Usage: switchover keys update ID [limits]\n\nChanges the limits given; the others stay as they are.\n", stderr)
	kf := addKeyFlags(fs)
	id, err := parseWithArg(fs, args, "a key ID")
	if err != nil {
		return err
	}
	body, err := kf.body()
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return usageError{errors.New("keys update: give at least one of --name, --team, --pools, --models, --rpm, --tpm, --max-concurrent, --budget, --expires, --patience, --cache, --request-log, --tag, --meta")}
	}
	raw, err := client().call(ctx, http.MethodPatch, "/admin/keys/"+url.PathEscape(id), body)
	if err != nil {
		return err
	}
	return printKeyAnswer(stdout, raw, *asJSON, "updated")
}

func keysAction(ctx context.Context, action string, args []string, stdout, stderr io.Writer) error {
	doc := map[string]string{
		"show":   "Prints one key.",
		"rotate": "Gives the key a new secret and prints it, once; the old secret stops working at once,\nor with --grace at the end of that time (for callers to move to the new one).",
		"revoke": "Revokes the key: it stops working for good (it stays listed).",
	}[action]
	usage := "Usage: switchover keys " + action + " ID\n\n" + doc + "\n"
	if action == "rotate" {
		usage = "Usage: switchover keys rotate [--grace 10m] ID\n\n" + doc + "\n"
	}
	fs, client, asJSON := subFlags("keys "+action, usage, stderr)
	var graceFlag *string
	if action == "rotate" {
		graceFlag = fs.String("grace", "", "how long the old secret keeps working: 10m, 36h, 7d (at most 30d; default: it stops at once)")
	}
	id, err := parseWithArg(fs, args, "a key ID")
	if err != nil {
		return err
	}
	method, path := http.MethodPost, "/admin/keys/"+url.PathEscape(id)+"/"+action
	if action == "show" {
		method, path = http.MethodGet, "/admin/keys/"+url.PathEscape(id)
	}
	var body any
	if graceFlag != nil && *graceFlag != "" {
		if _, err := config.ParseAge(*graceFlag); err != nil {
			return usageError{fmt.Errorf("--grace: %v", err)}
		}
		body = map[string]string{"grace": *graceFlag}
	}
	raw, err := client().call(ctx, method, path, body)
	if err != nil {
		return err
	}
	verb := map[string]string{"show": "", "rotate": "rotated", "revoke": "revoked"}[action]
	return printKeyAnswer(stdout, raw, *asJSON, verb)
}

// printKeyAnswer prints an answer of the key routes: the key, and the
// secret when there is one, with the warning that it is shown once.
func printKeyAnswer(w io.Writer, raw []byte, asJSON bool, verb string) error {
	if asJSON {
		_, err := w.Write(raw)
		return err
	}
	var a keyAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("admin API: unexpected answer: %v", err)
	}
	if verb != "" {
		fmt.Fprintf(w, "%s key %s (%s)\n", verb, a.Key.ID, a.Key.Name)
	}
	printKey(w, a.Key)
	if a.Secret != "" {
		fmt.Fprintf(w, "\nsecret: %s\n", a.Secret)
		fmt.Fprintf(w, "This secret will not be shown again: store it now (switchover keys rotate %s makes a new one).\n", a.Key.ID)
	}
	return nil
}

func printKey(w io.Writer, k ledgerapi.KeyView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(name, value string) { fmt.Fprintf(tw, "  %s\t%s\n", name, value) }
	line("id", k.ID)
	line("name", dash(k.Name))
	line("team", dash(k.Team))
	line("prefix", dash(k.Prefix))
	line("tags", dash(strings.Join(k.Tags, ",")))
	for _, name := range slices.Sorted(maps.Keys(k.Metadata)) {
		line("meta "+name, k.Metadata[name])
	}
	line("pools", list(k.Pools))
	line("models", list(k.Models))
	line("rpm", formatCount(k.RPM))
	line("tpm", formatCount(k.TPM))
	line("max concurrent", formatCount(int64(k.MaxConcurrent)))
	line("budget", formatBudget(k.Budget, k.BudgetPeriod))
	if k.SoftBudget > 0 {
		line("soft budget", strconv.FormatFloat(k.SoftBudget, 'f', -1, 64))
	}
	if len(k.Budgets) > 0 {
		line("pool budgets", keytext.PoolBudgets(k.Budgets))
	}
	line("expires", formatTime(k.Expires))
	line("patience", dash(k.Patience))
	if k.Cache != nil {
		line("cache", k.Cache.String())
	} else {
		line("cache", "- (its pools')")
	}
	line("request log", orPools(keytext.RequestLog(k.RequestLog)))
	line("created", formatTime(k.Created))
	if !k.Revoked.IsZero() {
		line("revoked", formatTime(k.Revoked))
	}
	if k.PrevPrefix != "" {
		line("old secret", k.PrevPrefix+" works until "+formatTime(k.PrevUntil))
	}
	line("state", k.State)
	line("source", k.Source)
	tw.Flush()
}

func keysList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, client, asJSON := subFlags("keys list", "Usage: switchover keys list [--tag TAG]\n\nLists every key: the store's, then the config file's (read-only).\n", stderr)
	var tags listFlag
	fs.Var(&tags, "tag", "only the keys with this tag; repeat: with every one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	q := url.Values{}
	for _, t := range tags.list {
		if err := labels.CheckTag(t); err != nil {
			return usageError{fmt.Errorf("--tag: %v", err)}
		}
		q.Add("tag", t)
	}
	path := "/admin/keys"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	raw, err := client().call(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(raw)
		return err
	}
	var a struct{ Keys []ledgerapi.KeyView }
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("admin API: unexpected answer: %v", err)
	}
	if len(a.Keys) == 0 {
		fmt.Fprintln(stdout, "no keys (create one with switchover keys create --name NAME)")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tname\tteam\ttags\tprefix\tpools\trpm\ttpm\tconcurrent\tbudget\texpires\tstate\tsource")
	for _, k := range a.Keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(k.ID), dash(k.Name), dash(k.Team),
			dash(strings.Join(k.Tags, ",")), dash(k.Prefix), list(k.Pools), formatCount(k.RPM), formatCount(k.TPM), formatCount(int64(k.MaxConcurrent)),
			formatBudget(k.Budget, k.BudgetPeriod), formatTime(k.Expires), k.State, k.Source)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// list is "all" for no restriction, else the names.
func list(l []string) string {
	if len(l) == 0 {
		return "all"
	}
	return strings.Join(l, ",")
}

// formatCount writes n as the flags take it (200k, 2m); 0 is "-".
func formatCount(n int64) string {
	switch {
	case n == 0:
		return "-"
	case n%1_000_000 == 0:
		return strconv.FormatInt(n/1_000_000, 10) + "m"
	case n%1000 == 0:
		return strconv.FormatInt(n/1000, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

func formatBudget(usd float64, period string) string {
	if usd == 0 {
		return "-"
	}
	return strconv.FormatFloat(usd, 'f', -1, 64) + "/" + period
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// metaFlag is --meta NAME=VALUE, repeatable; "" empties it (so that an
// update removes the key's metadata).
type metaFlag struct{ m map[string]string }

func (f *metaFlag) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(f.m)) {
		parts = append(parts, k+"="+f.m[k])
	}
	return strings.Join(parts, ",")
}

func (f *metaFlag) Set(v string) error {
	if f.m == nil {
		f.m = map[string]string{}
	}
	if v == "" {
		return nil
	}
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not NAME=VALUE", v)
	}
	f.m[name] = value
	return nil
}

// orPools is a key's own setting as printed, or "- (its pools')" when it
// has none.
func orPools(s string) string {
	if s == "" {
		return "- (its pools')"
	}
	return s
}
