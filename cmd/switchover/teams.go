package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

const teamsUsage = `Usage: switchover teams SUBCOMMAND [flags]

Teams: limits and a budget shared by their keys, on top of each key's own.
Teams set here are kept in the gateway's store; the config file's teams are
listed too (source "config") and are changed in the file.

  list                                       every team, of the store and the file
  set NAME [--rpm N] [--tpm N] [--budget B] [--soft-budget USD]
                                             create a team or change it; limits
                                             not given keep their value

--rpm and --tpm take 600, 200k, 1.5m (0: unlimited); --budget takes 50/month,
5/day, 200/week, 5/1h, 100/30d (none: no budget); --soft-budget an amount in USD
per the budget's period at which a budget notification goes out, refusing
nothing (none: the one at 80%). Both take -admin URL, -key KEY and -json.
`

// teamsCommand runs switchover teams SUBCOMMAND.
func teamsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, teamsUsage)
		return usageError{errors.New("teams needs a subcommand: list or set")}
	}
	switch args[0] {
	case "list":
		return teamsList(ctx, args[1:], stdout, stderr)
	case "set":
		return teamsSet(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, teamsUsage)
		return nil
	}
	fmt.Fprint(stderr, teamsUsage)
	return usageError{fmt.Errorf("teams: unknown subcommand %q", args[0])}
}

func fetchTeams(ctx context.Context, c *adminClient) ([]byte, []ledgerapi.TeamView, error) {
	raw, err := c.call(ctx, http.MethodGet, "/admin/teams", nil)
	if err != nil {
		return nil, nil, err
	}
	var a struct{ Teams []ledgerapi.TeamView }
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, nil, fmt.Errorf("admin API: unexpected answer: %v", err)
	}
	return raw, a.Teams, nil
}

func teamsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, client, asJSON := subFlags("teams list", "Usage: switchover teams list\n", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	raw, teams, err := fetchTeams(ctx, client())
	if err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(raw)
		return err
	}
	if len(teams) == 0 {
		fmt.Fprintln(stdout, "no teams (add one with switchover teams set NAME --budget 50/month)")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "name\trpm\ttpm\tbudget\tsource")
	for _, t := range teams {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, formatCount(t.RPM), formatCount(t.TPM), formatBudget(t.Budget, t.BudgetPeriod), t.Source)
	}
	return tw.Flush()
}

// teamsSet reads the team, changes the limits given and puts it back
// whole (PUT replaces a team), so that limits not given keep their value.
func teamsSet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, client, asJSON := subFlags("teams set", "Usage: switchover teams set NAME [--rpm N] [--tpm N] [--budget AMOUNT/PERIOD]\n\nCreates the team or changes it; limits not given keep their value.\n", stderr)
	fs.String("rpm", "", "requests per minute: 600, 1.5k (0: unlimited)")
	fs.String("tpm", "", "tokens per minute: 200k, 1m (0: unlimited)")
	fs.String("budget", "", "USD per period: 50/month, 5/day, 5/1h, 100/30d (none: no budget)")
	fs.String("soft-budget", "", "USD per the budget's period at which a budget alert goes out; refuses nothing (none: the alert at 80%)")
	name, err := parseWithArg(fs, args, "a team name")
	if err != nil {
		return err
	}
	set := map[string]string{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = strings.TrimSpace(f.Value.String()) })
	for _, n := range []string{"rpm", "tpm"} {
		if v, ok := set[n]; ok {
			if _, err := config.ParseCount(v); err != nil {
				return usageError{fmt.Errorf("--%s: %v", n, err)}
			}
		}
	}
	budget, hasBudget := set["budget"]
	if hasBudget && budget != "" && budget != "0" && !strings.EqualFold(budget, "none") {
		if _, err := config.ParseBudget(budget); err != nil {
			return usageError{fmt.Errorf("--budget: %v", err)}
		}
	}
	soft, hasSoft := set["soft-budget"]
	if err := checkDollars(soft); err != nil {
		return usageError{fmt.Errorf("--soft-budget: %v", err)}
	}
	c := client()
	_, teams, err := fetchTeams(ctx, c)
	if err != nil {
		return err
	}
	body := map[string]any{}
	for _, t := range teams {
		if t.Name == name {
			body["rpm"], body["tpm"] = t.RPM, t.TPM
			if t.Budget != 0 {
				body["budget_usd"], body["budget_period"] = t.Budget, t.BudgetPeriod
			}
			if t.SoftBudget != 0 {
				body["soft_budget"] = t.SoftBudget
			}
		}
	}
	for _, n := range []string{"rpm", "tpm"} {
		if v, ok := set[n]; ok {
			body[n] = v
		}
	}
	if hasBudget {
		delete(body, "budget_usd")
		delete(body, "budget_period")
		body["budget"] = budget
		if budget == "" || budget == "0" || strings.EqualFold(budget, "none") {
			delete(body, "soft_budget") // goes with the budget
		}
	}
	if hasSoft {
		body["soft_budget"] = soft
	}
	raw, err := c.call(ctx, http.MethodPut, "/admin/teams/"+url.PathEscape(name), body)
	if err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(raw)
		return err
	}
	var a struct{ Team ledger.Team }
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("admin API: unexpected answer: %v", err)
	}
	t := a.Team
	fmt.Fprintf(stdout, "team %s: rpm %s, tpm %s, budget %s", t.Name, formatCount(t.RPM), formatCount(t.TPM), formatBudget(t.Budget, t.BudgetPeriod))
	if t.SoftBudget > 0 {
		fmt.Fprintf(stdout, ", soft budget %s", strconv.FormatFloat(t.SoftBudget, 'f', -1, 64))
	}
	fmt.Fprintln(stdout)
	return nil
}
