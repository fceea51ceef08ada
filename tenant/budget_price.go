package tenant

import "github.com/switchover-gw/switchover/pricing"

// Ask is a request to admit, with what prices it against budgets.
type Ask struct {
	// Pool and Model are checked against the key's pools and models; ""
	// is not checked.
	Pool, Model string
	// Tokens is the request's estimate for tokens-per-minute limits:
	// its prompt and the most it may generate.
	Tokens int64
	// Prompt is the estimate of its prompt's tokens, and Completion the
	// most it may generate (its max_tokens, max_completion_tokens or
	// max_output_tokens); zero or less means DefaultCompletion.
	Prompt, Completion int64
	// Backend is the member of the pool most likely to answer (its top
	// member), and Models the model names to price it by, first found
	// first: the name the backend is asked for, then the caller's. No
	// Backend: the request is not priced.
	Backend string
	Models  []string
	// EndUser is the end user the request is made for ("" for none):
	// the limits of end users (Limits.EndUser) apply to it.
	EndUser string
}

// DefaultCompletion is the completion a request that sets no max_tokens
// (nor max_completion_tokens, max_output_tokens) is priced with against
// a budget: the max_tokens the gateway sends to a backend that requires
// one.
const DefaultCompletion = 4096

// PriceFunc returns the price of backend's tokens when asked for model,
// and whether it has one.
type PriceFunc func(backend, model string) (pricing.Price, bool)

// cost is what a priced the request at: its prompt and completion at
// the price of its backend, and whether it found a price. Unpriced, a
// request is expected to cost its subject's recent average.
func (a Ask) cost(price PriceFunc) (float64, bool) {
	if price == nil || a.Backend == "" {
		return 0, false
	}
	for _, m := range a.Models {
		if m == "" {
			continue
		}
		if p, ok := price(a.Backend, m); ok {
			completion := a.Completion
			if completion <= 0 {
				completion = DefaultCompletion
			}
			return p.Cost(max(a.Prompt, 0), 0, completion), true
		}
	}
	return 0, false
}
