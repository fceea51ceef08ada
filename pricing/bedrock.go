package pricing

import (
	"regexp"
	"strings"

	"github.com/switchover-gw/switchover/models"
)

// BedrockTaken is when the Bedrock prices below were checked: Amazon
// Bedrock's on-demand prices, us-east-1, per million tokens, as
// third-party guides of 2026 quote aws.amazon.com/bedrock/pricing (the
// stored copy of that page lacks its price tables). Claude on Bedrock is
// priced as on Anthropic's API (the table's claude-* entries); a
// cross-region inference profile (us., eu., apac., global.) costs what
// the source region does. Regional prices, provisioned throughput and
// batch discounts are not modelled: set backends[].price where they
// apply.
const BedrockTaken = "2026-12"

// bedrockTable is the price of the Bedrock-only models, by model ID
// without its geography prefix and version suffix. An entry whose Taken
// is empty is an estimate no published figure confirmed.
//
// Llama 3 8B (meta.llama3-8b-instruct) is not priced: the figure once
// shipped was Llama 3.1 8B's (0.22/0.22); the one guide found that gives
// it for Llama 3 8B gives Llama 3.1's figures for the other Llama 3
// models too, and AWS's own page was not readable, so it looked wrong.
var bedrockTable = map[string]Listed{
	"amazon.nova-micro":          {Price{Input: 0.035, Output: 0.14}, BedrockTaken},
	"amazon.nova-lite":           {Price{Input: 0.06, Output: 0.24}, BedrockTaken},
	"amazon.nova-pro":            {Price{Input: 0.80, Output: 3.20}, BedrockTaken},
	"meta.llama3-1-8b-instruct":  {Price{Input: 0.22, Output: 0.22}, ""},
	"mistral.mistral-large-2402": {Price{Input: 4.00, Output: 12.00}, BedrockTaken},
}

// bedrockID matches a Bedrock model ID or inference profile ID: an
// optional geography, the provider, the model, a version suffix.
var bedrockID = regexp.MustCompile(`^(?:(?:us|eu|apac|jp|au|ca|us-gov|global)\.)?([a-z0-9-]+)\.(.+?)(?:-v\d+(?::\d+)?)?$`)

// lookupBedrock prices a Bedrock model ID (lower case), such as
// us.anthropic.claude-sonnet-4-5-20250929-v1:0 or amazon.nova-pro-v1:0.
func lookupBedrock(m string) (Listed, bool) {
	if !strings.Contains(m, ".") {
		return Listed{}, false
	}
	g := bedrockID.FindStringSubmatch(m)
	if g == nil {
		return Listed{}, false
	}
	if g[1] == "anthropic" {
		l, ok := table[models.Canonical(g[2])]
		return l, ok
	}
	l, ok := bedrockTable[g[1]+"."+g[2]]
	return l, ok
}
