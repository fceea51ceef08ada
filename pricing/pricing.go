// Package pricing is what model calls cost: a table of list prices per
// million tokens for the common OpenAI, Azure OpenAI, Anthropic and Gemini
// models, and the arithmetic from an answer's token counts to dollars.
package pricing

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/switchover-gw/switchover/models"
)

// Taken is when the shipped prices were read from the providers' published
// list prices (standard tier, pay as you go, prompts under 200,000
// tokens). Prices change: a backend whose price differs, or that costs
// nothing per token (a provisioned deployment), says so in its
// configuration (backends[].price).
const Taken = "2026-03"

// Price is what a model's tokens cost, in US dollars per million.
// CachedInput is the price of prompt tokens the provider's cache served;
// zero means the cache is not priced apart (they cost Input).
type Price struct {
	Input       float64 `json:"input" yaml:"input"`
	CachedInput float64 `json:"cached_input" yaml:"cached_input"`
	Output      float64 `json:"output" yaml:"output"`
}

// Cost is what prompt tokens (cached of them served by the cache) and
// completion tokens cost at p, in dollars.
func (p Price) Cost(prompt, cached, completion int64) float64 {
	cached = min(max(cached, 0), prompt)
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	return (float64(prompt-cached)*p.Input + float64(cached)*cachedPrice + float64(completion)*p.Output) / 1e6
}

// Listed is a shipped price and the month it was read from the
// provider's published list (YYYY-MM). Taken is empty for an estimate:
// a price the project could not check against a published list (see
// Estimate); it is shipped so that the model is not free, and a backend
// that knows better sets backends[].price.
type Listed struct {
	Price
	Taken string
}

// Estimate reports whether l was not read from a published list.
func (l Listed) Estimate() bool { return l.Taken == "" }

// table is the shipped prices, by canonical model id (models.Canonical). Only
// exact names are priced: a variant (gpt-4o-audio-preview, a realtime
// model) has prices of its own and is not guessed from its family's.
var table = map[string]Listed{
	// OpenAI (Azure OpenAI's global deployments list the same).
	"gpt-5.4":                {Price{Input: 2.50, CachedInput: 0.25, Output: 15.00}, Taken},
	"gpt-5.1":                {Price{Input: 1.25, CachedInput: 0.125, Output: 10.00}, Taken},
	"gpt-5":                  {Price{Input: 1.25, CachedInput: 0.125, Output: 10.00}, Taken},
	"gpt-5-mini":             {Price{Input: 0.25, CachedInput: 0.025, Output: 2.00}, Taken},
	"gpt-5-nano":             {Price{Input: 0.05, CachedInput: 0.005, Output: 0.40}, Taken},
	"gpt-4.1":                {Price{Input: 2.00, CachedInput: 0.50, Output: 8.00}, Taken},
	"gpt-4.1-mini":           {Price{Input: 0.40, CachedInput: 0.10, Output: 1.60}, Taken},
	"gpt-4.1-nano":           {Price{Input: 0.10, CachedInput: 0.025, Output: 0.40}, Taken},
	"gpt-4o":                 {Price{Input: 2.50, CachedInput: 1.25, Output: 10.00}, Taken},
	"gpt-4o-mini":            {Price{Input: 0.15, CachedInput: 0.075, Output: 0.60}, Taken},
	"o3":                     {Price{Input: 2.00, CachedInput: 0.50, Output: 8.00}, Taken},
	"o3-mini":                {Price{Input: 1.10, CachedInput: 0.55, Output: 4.40}, Taken},
	"o4-mini":                {Price{Input: 1.10, CachedInput: 0.275, Output: 4.40}, Taken},
	"text-embedding-3-small": {Price{Input: 0.02}, Taken},
	"text-embedding-3-large": {Price{Input: 0.13}, Taken},
	"text-embedding-ada-002": {Price{Input: 0.10}, Taken},
	// Anthropic: CachedInput is a cache read.
	"claude-opus-4-5":   {Price{Input: 5.00, CachedInput: 0.50, Output: 25.00}, Taken},
	"claude-opus-4-1":   {Price{Input: 15.00, CachedInput: 1.50, Output: 75.00}, Taken},
	"claude-opus-4":     {Price{Input: 15.00, CachedInput: 1.50, Output: 75.00}, Taken},
	"claude-sonnet-4-5": {Price{Input: 3.00, CachedInput: 0.30, Output: 15.00}, Taken},
	"claude-sonnet-4":   {Price{Input: 3.00, CachedInput: 0.30, Output: 15.00}, Taken},
	"claude-haiku-4-5":  {Price{Input: 1.00, CachedInput: 0.10, Output: 5.00}, Taken},
	"claude-3-5-haiku":  {Price{Input: 0.80, CachedInput: 0.08, Output: 4.00}, Taken},
	// Gemini: the cache is priced by storage time as well; not apart here.
	"gemini-2.5-pro":        {Price{Input: 1.25, Output: 10.00}, Taken},
	"gemini-2.5-flash":      {Price{Input: 0.30, Output: 2.50}, Taken},
	"gemini-2.5-flash-lite": {Price{Input: 0.10, Output: 0.40}, Taken},
	// Open models on the clouds that serve them: priced per service
	// (byService); the default is the maker's own API where it has one.
	// DeepSeek's API: deepseek-chat and deepseek-reasoner (V3.2) at one
	// price since its September 2025 cut, as Roo Code's provider table
	// gives it ("Updated Dec 9, 2025", citing api-docs.deepseek.com);
	// the stored copy of DeepSeek's own pricing page is older.
	"deepseek-v3": {Price{Input: 0.28, CachedInput: 0.028, Output: 0.42}, "2025-12"},
	"deepseek-r1": {Price{Input: 0.28, CachedInput: 0.028, Output: 0.42}, "2025-12"},
}

// byService are the prices of a service that lists a model at a price
// of its own, by service (a backend's Service: its type or preset) and
// canonical id. Claude on Bedrock and Vertex AI, Gemini on Vertex AI and
// OpenAI's models on Azure list the maker's prices (global endpoints;
// regional ones may add a premium, set backends[].price for those), so
// they need no entry: they price by their canonical id.
//
// The Bedrock and Foundry entries are estimates (Taken empty): no
// published figure for them could be found to check them against, so
// they are not dated. Groq's is the figure a third-party guide quotes
// from Groq's list in April 2026.
var byService = map[string]Listed{
	"bedrock llama-3.3-70b-instruct": {Price{Input: 0.72, Output: 0.72}, ""},
	"bedrock deepseek-r1":            {Price{Input: 1.35, Output: 5.40}, ""},
	"foundry deepseek-r1":            {Price{Input: 1.35, Output: 5.40}, ""},
	"foundry llama-3.3-70b-instruct": {Price{Input: 0.71, Output: 0.71}, ""},
	"groq llama-3.3-70b-instruct":    {Price{Input: 0.59, Output: 0.79}, "2026-04"},
}

// Lookup returns the shipped price of model (a model or version name an
// answer names, such as gpt-4o-2024-08-06 or claude-sonnet-4-5-20250929,
// or a cloud's id of it, such as Bedrock's
// us.anthropic.claude-sonnet-4-5-20250929-v1:0 or Vertex's
// claude-sonnet-4-5@20250929: see models.Canonical), and whether there
// is one.
func Lookup(model string) (Price, bool) {
	l, ok := LookupService("", model)
	return l.Price, ok
}

// LookupService is Lookup for a backend of service (config's
// Backend.Service: its type or preset, such as bedrock or groq): the
// service's own list price of the model if it has one, else the model's.
// It returns the price with the month it was taken.
func LookupService(service, model string) (Listed, bool) {
	k := seenKey{service, model}
	if v, ok := seen.Load(k); ok {
		l := v.(lookup)
		return l.l, l.ok
	}
	id := models.Canonical(model)
	l, ok := byService[service+" "+id]
	if !ok {
		l, ok = table[id]
	}
	if !ok {
		l, ok = lookupBedrock(strings.ToLower(strings.TrimSpace(model)))
	}
	if n := seenCount.Add(1); n <= maxSeen {
		seen.Store(k, lookup{l, ok})
	}
	return l, ok
}

// seen remembers the answers for the model names met so far (a handful,
// asked once per request), up to maxSeen names, so that the request path
// does not run the date's regexp each time.
var (
	seen      sync.Map // model name -> lookup
	seenCount atomic.Int64
)

const maxSeen = 1024

type seenKey struct{ service, model string }

type lookup struct {
	l  Listed
	ok bool
}
