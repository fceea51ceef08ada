package gameday

import (
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/sim"
)

// TestProviderRegionsConfigure: a scenario's anthropic and bedrock
// regions become the simulator's flavours (Bedrock with its AWS key and
// region) and the gateway's backends and members with their models, and
// the configuration loads.
func TestProviderRegionsConfigure(t *testing.T) {
	sc := Scenario{Name: "x", Regions: []Region{
		{Name: "anthropic", Provider: ProviderAnthropic, Latency: Duration(400e6)},
		{Name: "bedrock", Provider: ProviderBedrock, Latency: Duration(400e6)},
		{Name: "azure", Latency: Duration(400e6)},
	}}
	cfg := simConfig(sc, nil)
	byName := map[string]sim.Deployment{}
	for _, d := range cfg.Deployments {
		byName[d.Name] = d
	}
	if d := byName["bedrock"]; d.Flavour != sim.Bedrock || d.Region != bedrockRegion || d.Key != bedrockKeyID+":"+bedrockSecret || d.Deployment != regionModel(ProviderBedrock) {
		t.Errorf("bedrock: %+v", d)
	}
	if d := byName["anthropic"]; d.Flavour != sim.Anthropic || d.Deployment != "claude-sonnet-4-5" {
		t.Errorf("anthropic: %+v", d)
	}
	if d := byName["azure"]; d.Flavour != sim.Azure || d.Deployment != "chat-prod" {
		t.Errorf("azure: %+v", d)
	}
	eps := []sim.Endpoint{
		{Name: "anthropic", Region: "anthropic", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", URL: "http://127.0.0.1:1"},
		{Name: "bedrock", Region: bedrockRegion, Flavour: sim.Bedrock, Deployment: regionModel(ProviderBedrock), URL: "http://127.0.0.1:2"},
		{Name: "azure", Region: "azure", Flavour: sim.Azure, Deployment: "chat-prod", URL: "http://127.0.0.1:3"},
	}
	st := Setup{Name: "s", Mode: "gateway", Defaults: true, Members: []Member{{Region: "anthropic", Priority: 1}, {Region: "bedrock", Priority: 2}, {Region: "azure", Priority: 3}}}
	y := poolYAML(st, eps, "", nil, 0)
	for _, want := range []string{"type: bedrock", "region: us-east-1", "access_key_id: " + bedrockKeyID, "type: anthropic",
		"backend: bedrock, priority: 2, weight: 1, model: us.anthropic.claude-sonnet-4-5-20250929-v1:0", "backend: azure, priority: 3, weight: 1}"} {
		if !strings.Contains(y, want) {
			t.Errorf("missing %q in:\n%s", want, y)
		}
	}
	if _, err := config.Parse("gameday.yaml", []byte(y), func(string) (string, bool) { return "", false }); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	bad := Scenario{Name: "x", Regions: []Region{{Name: "a", Provider: "vertex"}}}
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), `provider must be azure, anthropic or bedrock, not "vertex"`) {
		t.Errorf("validate = %v", err)
	}
}
