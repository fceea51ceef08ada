// Package pricing is what model calls cost: a table of list prices per
// million tokens for the common OpenAI, Azure OpenAI, Anthropic and Gemini
// models, and the arithmetic from an answer's token counts to dollars.
package pricing

import (
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
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

// table is the shipped prices, by model name without its date. Only
// exact names are priced: a variant (gpt-4o-audio-preview, a realtime
// model) has prices of its own and is not guessed from its family's.
var table = map[string]Price{
	// OpenAI (Azure OpenAI's global deployments list the same).
	"gpt-5.4":                {Input: 2.50, CachedInput: 0.25, Output: 15.00},
	"gpt-5.1":                {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5":                  {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5-mini":             {Input: 0.25, CachedInput: 0.025, Output: 2.00},
	"gpt-5-nano":             {Input: 0.05, CachedInput: 0.005, Output: 0.40},
	"gpt-4.1":                {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"gpt-4.1-mini":           {Input: 0.40, CachedInput: 0.10, Output: 1.60},
	"gpt-4.1-nano":           {Input: 0.10, CachedInput: 0.025, Output: 0.40},
	"gpt-4o":                 {Input: 2.50, CachedInput: 1.25, Output: 10.00},
	"gpt-4o-mini":            {Input: 0.15, CachedInput: 0.075, Output: 0.60},
	"o3":                     {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"o3-mini":                {Input: 1.10, CachedInput: 0.55, Output: 4.40},
	"o4-mini":                {Input: 1.10, CachedInput: 0.275, Output: 4.40},
	"text-embedding-3-small": {Input: 0.02},
	"text-embedding-3-large": {Input: 0.13},
	"text-embedding-ada-002": {Input: 0.10},
	// Anthropic: CachedInput is a cache read.
	"claude-opus-4-5":   {Input: 5.00, CachedInput: 0.50, Output: 25.00},
	"claude-opus-4-1":   {Input: 15.00, CachedInput: 1.50, Output: 75.00},
	"claude-opus-4":     {Input: 15.00, CachedInput: 1.50, Output: 75.00},
	"claude-sonnet-4-5": {Input: 3.00, CachedInput: 0.30, Output: 15.00},
	"claude-sonnet-4":   {Input: 3.00, CachedInput: 0.30, Output: 15.00},
	"claude-haiku-4-5":  {Input: 1.00, CachedInput: 0.10, Output: 5.00},
	"claude-3-5-haiku":  {Input: 0.80, CachedInput: 0.08, Output: 4.00},
	// Gemini: the cache is priced by storage time as well; not apart here.
	"gemini-2.5-pro":        {Input: 1.25, Output: 10.00},
	"gemini-2.5-flash":      {Input: 0.30, Output: 2.50},
	"gemini-2.5-flash-lite": {Input: 0.10, Output: 0.40},
}

// dated is a model version's date suffix: "-2024-08-06", "-20250929".
var dated = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8})$`)

// Lookup returns the shipped price of model (a model or version name an
// answer names, such as gpt-4o-2024-08-06 or claude-sonnet-4-5-20250929;
// the date, a "models/" prefix and case are ignored), and whether there
// is one.
func Lookup(model string) (Price, bool) {
	if v, ok := seen.Load(model); ok {
		l := v.(lookup)
		return l.p, l.ok
	}
	m := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(model), "models/"))
	p, ok := table[dated.ReplaceAllString(m, "")]
	if !ok {
		p, ok = lookupBedrock(m)
	}
	if n := seenCount.Add(1); n <= maxSeen {
		seen.Store(model, lookup{p, ok})
	}
	return p, ok
}

// seen remembers the answers for the model names met so far (a handful,
// asked once per request), up to maxSeen names, so that the request path
// does not run the date's regexp each time.
var (
	seen      sync.Map // model name -> lookup
	seenCount atomic.Int64
)

const maxSeen = 1024

type lookup struct {
	p  Price
	ok bool
}
