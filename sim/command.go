package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"
)

// quickFlags are the flags of the quick form: a config built from flags.
var quickFlags = []string{"regions", "flavour", "deployment", "rpm", "tpm", "key", "latency"}

// Command runs `switchover sim`: it starts a simulation from a YAML file
// (-c sim.yaml) or from flags (the quick form, by default the three demo
// regions), prints each deployment's base URL and the control URL to
// stdout, logs to stderr, and serves until ctx is cancelled. It returns nil
// after a clean stop, flag.ErrHelp for -h, or the error that kept it from
// starting.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("switchover sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var configPath string
	fs.StringVar(&configPath, "c", "", "YAML config `file` (see docs/sim.md)")
	fs.StringVar(&configPath, "config", "", "same as -c")
	regions := fs.String("regions", "uksouth,swedencentral,westeurope", "quick form: comma-separated regions, one deployment each")
	flavour := fs.String("flavour", string(Azure), "quick form: wire flavour: azure, openai, anthropic, gemini, vertex or bedrock")
	depName := fs.String("deployment", DemoDeployment, "quick form: azure deployment name / openai, anthropic or gemini model")
	rpm := fs.Int("rpm", DemoRPM, "quick form: requests per minute per deployment (0 = unlimited)")
	tpm := fs.Int("tpm", DemoTPM, "quick form: tokens per minute per deployment (0 = unlimited)")
	key := fs.String("key", "", "quick form: API key every deployment requires (default none)")
	latency := fs.Duration("latency", 300*time.Millisecond, "quick form: median latency of regions other than uksouth, swedencentral, westeurope")
	seed := fs.Int64("seed", 0, "random seed (0 = random; overrides the file)")
	slice := fs.Duration("slice", DefaultSlice, "quota slice (overrides the file)")
	listen := fs.String("listen", "", "one `address` for all deployments, routed by /{name} (overrides the file)")
	control := fs.String("control", "", "extra `address` for the control API (overrides the file)")
	verbose := fs.Bool("v", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sim: unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var cfg Config
	if configPath != "" {
		for _, q := range quickFlags {
			if set[q] {
				return fmt.Errorf("sim: --%s belongs to the quick form; set it in %s instead", q, configPath)
			}
		}
		var err error
		if cfg, err = LoadConfig(configPath); err != nil {
			return err
		}
	} else {
		cfg = quickConfig(*regions, Flavour(*flavour), *depName, *key, *rpm, *tpm, *latency)
		cfg.Slice = *slice
	}
	if set["seed"] {
		cfg.Seed = *seed
	}
	if set["slice"] {
		cfg.Slice = *slice
	}
	if set["listen"] {
		cfg.Listen = *listen
	}
	if set["control"] {
		cfg.Control = *control
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	s, err := Start(ctx, cfg, WithLogger(logger))
	if err != nil {
		return err
	}
	printEndpoints(stdout, s)
	<-ctx.Done()
	if err := s.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// quickConfig builds the quick form's config: one deployment per region,
// with the demo latency for the demo's regions.
func quickConfig(regions string, fl Flavour, dep, key string, rpm, tpm int, latency time.Duration) Config {
	fallback := Latency{Median: latency, Spread: 0.3, PerToken: 10 * time.Millisecond}
	var cfg Config
	for _, r := range strings.Split(regions, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		cfg.Deployments = append(cfg.Deployments, Deployment{
			Name: r, Region: r, Flavour: fl, Deployment: dep, Key: key,
			Latency: regionLatency(r, fallback),
			Quota:   Quota{RPM: rpm, TPM: tpm},
		})
	}
	return cfg
}

func printEndpoints(w io.Writer, s *Sim) {
	cfg := s.cfg
	fmt.Fprintf(w, "switchover sim: %d deployments, seed %d, quota slice %s\n", len(s.deps), s.Seed(), cfg.Slice)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for i, e := range s.Deployments() {
		q := s.deps[i].cfg.Quota
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\tdeployment=%s\trpm=%s tpm=%s\n",
			e.Name, e.Region, e.Flavour, e.URL, e.Deployment, limitText(q.RPM), limitText(q.TPM))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "control: %s  (stats %s/stats, metrics %s/metrics)\n", s.ControlURL(), s.ControlURL(), s.ControlURL())
}

func limitText(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
