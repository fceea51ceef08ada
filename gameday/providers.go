package gameday

import (
	"fmt"

	"github.com/switchover-gw/switchover/sim"
)

// A scenario's region is an Azure OpenAI deployment unless it names
// another provider (Region.Provider): Anthropic's API, or Claude on
// Amazon Bedrock, so that a scenario can rehearse a provider's outage
// and the failover to the same model on another cloud.

// Provider names for Region.Provider.
const (
	ProviderAzure     = "azure"
	ProviderAnthropic = "anthropic"
	ProviderBedrock   = "bedrock"
)

// The simulated Bedrock's AWS key and region: the gateway signs with the
// key, the simulator verifies the signature.
const (
	bedrockKeyID  = "AKIDGAMEDAYEXAMPLE"
	bedrockSecret = "gameday-bedrock-secret-example"
	bedrockRegion = "us-east-1"
)

// regionModel is the model a region of provider p serves: what the pool
// member names and the simulator answers for.
func regionModel(p string) string {
	switch p {
	case ProviderAnthropic:
		return "claude-sonnet-4-5"
	case ProviderBedrock:
		return "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	}
	return "chat-prod"
}

// simRegion is the simulated deployment of r: its flavour, model, key
// and, for Bedrock, the AWS region it verifies signatures for.
func simRegion(r Region, d sim.Deployment) sim.Deployment {
	d.Deployment = regionModel(r.Provider)
	switch r.Provider {
	case ProviderAnthropic:
		d.Flavour = sim.Anthropic
	case ProviderBedrock:
		d.Flavour, d.Region, d.Key = sim.Bedrock, bedrockRegion, bedrockKeyID+":"+bedrockSecret
	}
	return d
}

// backendLine is the gateway backend of a simulated region (quota is the
// extra settings of the setup).
func backendLine(e sim.Endpoint, quota string) string {
	switch e.Flavour {
	case sim.Anthropic:
		return fmt.Sprintf("  - {name: %s, type: anthropic, url: %q%s}\n", e.Name, e.URL, quota)
	case sim.Bedrock:
		return fmt.Sprintf("  - {name: %s, type: bedrock, url: %q, region: %s, aws: {access_key_id: %s, secret_access_key: %s}%s}\n",
			e.Name, e.URL, e.Region, bedrockKeyID, bedrockSecret, quota)
	}
	return fmt.Sprintf("  - {name: %s, type: azure, url: %q, region: %s%s}\n", e.Name, e.URL, e.Region, quota)
}

// memberModel is the model setting of a member on region name: "" for
// Azure's, whose deployment is the pool's name.
func memberModel(eps []sim.Endpoint, name string) string {
	for _, e := range eps {
		if e.Name == name && e.Flavour != sim.Azure && e.Flavour != "" {
			return ", model: " + e.Deployment
		}
	}
	return ""
}
