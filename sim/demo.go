package sim

import "time"

// Demo defaults: the quota of each demo region and the Azure deployment
// name the gateway's demo mode points at.
const (
	DemoDeployment = "chat-prod"
	DemoRPM        = 60
	DemoTPM        = 6000
)

// demoRegions are the regions of the built-in demo, fastest first. The
// medians are the published per-region figures the demo is modelled on;
// the spreads (westeurope widest) and the per-token time are this
// simulator's choice.
var demoRegions = []struct {
	region  string
	latency Latency
}{
	{"uksouth", Latency{Median: 300 * time.Millisecond, Spread: 0.25, PerToken: 10 * time.Millisecond}},
	{"swedencentral", Latency{Median: 365 * time.Millisecond, Spread: 0.3, PerToken: 10 * time.Millisecond}},
	{"westeurope", Latency{Median: 480 * time.Millisecond, Spread: 0.5, PerToken: 10 * time.Millisecond}},
}

// regionLatency is the demo latency of a known region, or fallback.
func regionLatency(region string, fallback Latency) Latency {
	for _, r := range demoRegions {
		if r.region == region {
			return r.latency
		}
	}
	return fallback
}

// DemoConfig is the simulation behind the gateway's built-in demo: three
// Azure-flavoured deployments named after their regions (uksouth ~300 ms
// median, swedencentral ~365 ms, westeurope ~480 ms with the widest
// spread), each with deployment name "chat-prod", 60 RPM and 6000 TPM over
// 10 s slices (so the 11th quick request in a slice gets a 429), no keys,
// a random seed, and one loopback port each.
func DemoConfig() Config {
	cfg := Config{Slice: DefaultSlice}
	for _, r := range demoRegions {
		cfg.Deployments = append(cfg.Deployments, Deployment{
			Name:       r.region,
			Region:     r.region,
			Flavour:    Azure,
			Deployment: DemoDeployment,
			Latency:    r.latency,
			Quota:      Quota{RPM: DemoRPM, TPM: DemoTPM},
		})
	}
	return cfg
}
