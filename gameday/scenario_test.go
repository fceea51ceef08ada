package gameday

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidateNewFields(t *testing.T) {
	base := func() Scenario {
		return Scenario{
			Name: "x", Regions: fastRegions(0)[:2],
			Load:   Load{Rate: 1, Duration: d(time.Second)},
			Setups: []Setup{{Name: "s", Mode: "gateway", Members: weights(1, 1)}},
		}
	}
	tests := []struct {
		name   string
		modify func(*Scenario)
		want   string // "" when valid
	}{
		{"defaults setup", func(s *Scenario) { s.Setups[0].Defaults = true }, ""},
		{"defaults setup with attempts", func(s *Scenario) { s.Setups[0].Defaults, s.Setups[0].Attempts = true, 2 }, ""},
		{"defaults setup with a breaker", func(s *Scenario) { s.Setups[0].Defaults, s.Setups[0].Breaker = true, sinBin(1) },
			"a defaults setup takes switchover's shipped breaker and timeouts"},
		{"defaults setup with a timeout", func(s *Scenario) { s.Setups[0].Defaults, s.Setups[0].FirstByteTimeout = true, d(time.Second) },
			"a defaults setup takes switchover's shipped breaker and timeouts"},
		{"defaults setup with a stream timeout", func(s *Scenario) {
			s.Setups[0].Defaults, s.Setups[0].StreamFirstByteTimeout = true, d(time.Second)
		}, "remove breaker and the timeouts"},
		{"negative attempts", func(s *Scenario) { s.Setups[0].Attempts = -1 }, "attempts must not be negative"},
		{"noise", func(s *Scenario) { s.Noise = &Load{Rate: 2, Total: 5, MaxTokens: 1000000} }, ""},
		{"noise without a rate", func(s *Scenario) { s.Noise = &Load{Total: 5} }, "noise: set exactly one of rate or concurrency"},
		{"noise without an end", func(s *Scenario) { s.Noise = &Load{Concurrency: 1} }, "noise: set a duration or a total"},
		{"setup fault", func(s *Scenario) {
			s.Setups[0].Faults = []Fault{{Region: "uksouth", Mode: "unauthorized", To: d(time.Second)}}
		}, ""},
		{"setup fault on an unknown region", func(s *Scenario) {
			s.Setups[0].Faults = []Fault{{Region: "nowhere", Mode: "not_found", To: d(time.Second)}}
		}, `setup "s": fault on unknown region "nowhere"`},
		{"setup fault ending before it starts", func(s *Scenario) {
			s.Setups[0].Faults = []Fault{{Region: "uksouth", Mode: "down", From: d(2 * time.Second), To: d(time.Second)}}
		}, `setup "s": fault on uksouth: to must be after from`},
		{"targets", func(s *Scenario) { s.Targets = "everything answered" }, ""},
		{"repeats", func(s *Scenario) { s.Load.Repeat = 0.3 }, ""},
		{"repeat share of 1", func(s *Scenario) { s.Load.Repeat = 1 }, "load: repeat is a share of the requests"},
		{"negative repeat share", func(s *Scenario) { s.Load.Repeat = -0.1 }, "load: repeat is a share of the requests"},
		{"noise repeats", func(s *Scenario) { s.Noise = &Load{Rate: 1, Total: 5, Repeat: 2} }, "noise: repeat is a share"},
		{"cache", func(s *Scenario) { s.Setups[0].Cache = &Cache{TTL: d(time.Minute)} }, ""},
		{"coalescing only", func(s *Scenario) { s.Setups[0].Cache = &Cache{} }, ""},
		{"cache doing nothing", func(s *Scenario) { off := false; s.Setups[0].Cache = &Cache{Coalesce: &off} },
			`setup "s": a cache with no ttl and coalesce false does nothing`},
		{"negative cache ttl", func(s *Scenario) { s.Setups[0].Cache = &Cache{TTL: d(-time.Second)} }, "cache ttl must not be negative"},
		{"cache on a client setup", func(s *Scenario) { s.Setups[0].Mode, s.Setups[0].Cache = "client", &Cache{} },
			"cache is the gateway's (pools[].cache): only for gateway setups"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := base()
			tc.modify(&sc)
			err := sc.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadFileNewFields(t *testing.T) {
	y := `scenarios:
  - name: mine
    targets: the main key gets everything answered
    regions: [{name: a, latency: 100ms, tpm: 30000}, {name: b, latency: 200ms, tpm: 30000}]
    load: {rate: 0.5, duration: 60s, max_tokens: 16}
    noise: {rate: 2, total: 5, max_tokens: 1000000}
    setups:
      - {name: shipped, mode: gateway, defaults: true, members: [{region: a}, {region: b}]}
      - name: revoked
        mode: gateway
        defaults: true
        attempts: 2
        members: [{region: a}, {region: b}]
        faults: [{region: a, mode: truncate_stream, after: 2, from: 0s, to: 60s}]
`
	p := filepath.Join(t.TempDir(), "new.yaml")
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	scs, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sc := scs[0]
	if sc.Targets != "the main key gets everything answered" || sc.Noise == nil || sc.Noise.Total != 5 || sc.Noise.MaxTokens != 1000000 {
		t.Errorf("scenario %+v, noise %+v", sc, sc.Noise)
	}
	st := sc.Setups[1]
	if !sc.Setups[0].Defaults || !st.Defaults || st.Attempts != 2 || len(st.Faults) != 1 || st.Faults[0].After != 2 || st.Faults[0].To.D() != time.Minute {
		t.Errorf("setups %+v", sc.Setups)
	}
	if f := sc.faults(st); len(f) != 1 || f[0].Mode != "truncate_stream" {
		t.Errorf("faults of the second setup %+v", f)
	}
	if got := sc.scaled(1).describeLoad(); got != "0.5 req/s arriving (open model) for 1m0s; noise: 5 requests from 2 req/s arriving (open model), max_tokens 1000000" {
		t.Errorf("load = %q", got)
	}
}

func TestScaledNoiseAndSetupFaults(t *testing.T) {
	sc := Scenario{
		Load:   Load{Rate: 1, Duration: d(time.Minute)},
		Noise:  &Load{Rate: 2, Duration: d(30 * time.Second)},
		Setups: []Setup{{Name: "s", Faults: []Fault{{Region: "a", From: d(10 * time.Second), To: d(20 * time.Second)}}}},
	}
	s := sc.scaled(10)
	if s.Noise.Rate != 20 || s.Noise.Duration.D() != 3*time.Second {
		t.Errorf("noise %+v", s.Noise)
	}
	if f := s.Setups[0].Faults[0]; f.From.D() != time.Second || f.To.D() != 2*time.Second {
		t.Errorf("setup fault %+v", f)
	}
	if sc.Noise.Rate != 2 || sc.Setups[0].Faults[0].From.D() != 10*time.Second {
		t.Error("scaling modified the scenario")
	}
}
