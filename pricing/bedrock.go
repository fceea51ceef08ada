package pricing

import (
	"regexp"
	"strings"

	"github.com/switchover-gw/switchover/models"
)

// BedrockTaken is when the Bedrock prices below were read: Amazon
// Bedrock's pricing page (aws.amazon.com/bedrock/pricing), on-demand,
// us-east-1, per million tokens. Claude on Bedrock is priced as on
// Anthropic's API (the table's claude-* entries); a cross-region
// inference profile (us., eu., apac., global.) costs what the source
// region does. Regional prices, provisioned throughput and batch
// discounts are not modelled: set backends[].price where they apply.
const BedrockTaken = "2026-12"

// bedrockTable is the price of the Bedrock-only models, by model ID
// without its geography prefix and version suffix.
var bedrockTable = map[string]Price{
	"amazon.nova-micro":          {Input: 0.035, Output: 0.14},
	"amazon.nova-lite":           {Input: 0.06, Output: 0.24},
	"amazon.nova-pro":            {Input: 0.80, Output: 3.20},
	"meta.llama3-8b-instruct":    {Input: 0.22, Output: 0.22},
	"meta.llama3-1-8b-instruct":  {Input: 0.22, Output: 0.22},
	"mistral.mistral-large-2402": {Input: 4.00, Output: 12.00},
}

// bedrockID matches a Bedrock model ID or inference profile ID: an
// optional geography, the provider, the model, a version suffix.
var bedrockID = regexp.MustCompile(`^(?:(?:us|eu|apac|jp|au|ca|us-gov|global)\.)?([a-z0-9-]+)\.(.+?)(?:-v\d+(?::\d+)?)?$`)

// lookupBedrock prices a Bedrock model ID (lower case), such as
// us.anthropic.claude-sonnet-4-5-20250929-v1:0 or amazon.nova-pro-v1:0.
func lookupBedrock(m string) (Price, bool) {
	if !strings.Contains(m, ".") {
		return Price{}, false
	}
	g := bedrockID.FindStringSubmatch(m)
	if g == nil {
		return Price{}, false
	}
	if g[1] == "anthropic" {
		l, ok := table[models.Canonical(g[2])]
		return l.Price, ok
	}
	p, ok := bedrockTable[g[1]+"."+g[2]]
	return p, ok
}
