package gameday

import "time"

func d(s time.Duration) Duration { return Duration(s) }

// The three regions of the published comparison of API Management against
// client-side failover, with the median latencies it measured from a UK
// laptop and 60 requests per minute each.
func benchmarkRegions(rpm, tpm int) []Region {
	return []Region{
		{Name: "uksouth", Latency: d(300 * time.Millisecond), Spread: 0.25, RPM: rpm, TPM: tpm},
		{Name: "westeurope", Latency: d(480 * time.Millisecond), Spread: 0.5, RPM: rpm, TPM: tpm},
		{Name: "swedencentral", Latency: d(365 * time.Millisecond), Spread: 0.3, RPM: rpm, TPM: tpm},
	}
}

func weights(w ...int) []Member {
	names := []string{"uksouth", "westeurope", "swedencentral"}
	var out []Member
	for i, x := range w {
		out = append(out, Member{Region: names[i], Priority: 1, Weight: x})
	}
	return out
}

func priorities(p ...int) []Member {
	names := []string{"uksouth", "westeurope", "swedencentral"}
	var out []Member
	for i, x := range p {
		out = append(out, Member{Region: names[i], Priority: x, Weight: 1})
	}
	return out
}

// sinBin is API Management's rule as the benchmark configured it: out of
// the pool for 60 s after n failures (429 or 5xx), then one probe.
func sinBin(n int) *Breaker {
	return &Breaker{Failures: n, Window: d(60 * time.Second), Trip: d(60 * time.Second)}
}

// switchoverBin is switchover's default breaker: 5 failures in 30 s bench
// a region for as long as its Retry-After says (60 s and a probe when it
// gives none).
func switchoverBin() *Breaker {
	return &Breaker{Failures: 5, Window: d(30 * time.Second), Trip: d(60 * time.Second), FollowRetryAfter: true}
}

// repeatSetups are the setups of every-region-short-repeats: two kinds
// of gateway, each without and with the response cache.
func repeatSetups() []Setup {
	cache := &Cache{TTL: d(10 * time.Minute)}
	return []Setup{
		{Name: "gateway: no retry", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 1,
			Description: "Even split, no retry, no breaker, no cache: one model call per request."},
		{Name: "gateway: no retry, cache", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 1, Cache: cache,
			Description: "The same with cache: {ttl: 10m}: a repeat is answered from the cache, or shares the call of an identical request in flight."},
		{Name: "gateway: switchover defaults", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
			Description: "Retry on another region, switchover's breaker, quota-aware; no cache (the cache is off by default)."},
		{Name: "gateway: switchover defaults, coalescing only", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
			Cache:       &Cache{}, // no ttl; coalesce defaults to true
			Description: "As above with cache: {coalesce: true}: nothing stored; only a repeat sent while its first call is in flight shares it."},
		{Name: "gateway: switchover defaults, cache", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
			Cache:       cache,
			Description: "As above with cache: {ttl: 10m} (coalescing on, its default)."},
	}
}

// outageMembers is the priority pool of outage-default-timeouts:
// westeurope first, the other two only while it is out.
func outageMembers() []Member {
	return []Member{{Region: "westeurope", Priority: 1}, {Region: "uksouth", Priority: 2}, {Region: "swedencentral", Priority: 2}}
}

// misconfigured puts westeurope out of order with fault mode (a revoked
// key, a deleted deployment) for a whole misconfigured-region run.
func misconfigured(mode string) []Fault {
	return []Fault{{Region: "westeurope", Mode: mode, From: 0, To: d(60 * time.Second)}}
}

// takingTurns is the faults of regions-taking-turns: westeurope and
// swedencentral fail by turns, each for step, in modes one after the
// other (westeurope first).
func takingTurns(step time.Duration, modes ...string) []Fault {
	var out []Fault
	for i, m := range modes {
		region := "westeurope"
		if i%2 == 1 {
			region = "swedencentral"
		}
		out = append(out, Fault{Region: region, Mode: m, From: d(time.Duration(i) * step), To: d(time.Duration(i+1) * step)})
	}
	return out
}

// westeuropeFirst is the pool of region-outage and regions-taking-turns:
// westeurope first, swedencentral while it is out.
func westeuropeFirst() []Member {
	return []Member{{Region: "westeurope", Priority: 1}, {Region: "swedencentral", Priority: 2}}
}

// apimRule is API Management's breaker rule as the Azure OpenAI game day
// set it up: 5 failures in 30 s bench a region for 60 s, then one probe.
func apimRule() *Breaker {
	return &Breaker{Failures: 5, Window: d(30 * time.Second), Trip: d(60 * time.Second)}
}

// Builtin returns the built-in scenarios, in order. The first eight take
// their real-time durations from the benchmark (five-minute steady runs,
// 200-request bursts) and the Azure OpenAI multi-region game day (API
// Management backend pools and circuit breakers), each with the
// compression that makes them run in a few minutes. The last five
// measure switchover as shipped (setups with Defaults) and so run in real
// time: about seventeen minutes more.
func Builtin() []Scenario {
	const steady = 5 * time.Minute
	return []Scenario{
		{
			Name:  "nothing-wrong",
			Title: "Nothing wrong",
			Description: "An even split across three regions with quota to spare: nothing is refused, so any " +
				"difference between the gateway and direct calls is the gateway's own cost.",
			Compress: 50,
			Regions:  benchmarkRegions(60, 60000),
			Load:     Load{Rate: 1, Duration: d(steady), MaxTokens: 5},
			Setups: []Setup{
				{Name: "client: direct, even split", Mode: "client", Members: weights(1, 1, 1), Attempts: 1,
					Description: "No gateway: the caller splits calls evenly across the regions, no retry."},
				{Name: "gateway: even split", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 1,
					Description: "The same traffic through switchover, no retry and no breaker."},
				{Name: "gateway: switchover defaults", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
					Description: "switchover as configured by default: retry on another region, a breaker on every region."},
			},
		},
		{
			Name:  "main-region-short",
			Title: "Main region short",
			Description: "90% of the traffic is aimed at uksouth, more than its quota allows (about 108 requests a " +
				"minute against 60); the other two regions sit nearly idle. Which setups steer calls to the regions with room?",
			// 10x, not 50x: a quota slice (1 s) must outlast a call for a
			// quota-aware gateway to hear a window's figures before it
			// ends, as on Azure (10 s slices); two minutes are 120 slices.
			Compress: 10,
			Regions:  benchmarkRegions(72, 60000),
			Load:     Load{Rate: 2, Duration: d(2 * time.Minute), MaxTokens: 5},
			Setups: []Setup{
				{Name: "gateway: no failover", Mode: "gateway", Members: weights(90, 5, 5), Attempts: 1,
					Description: "Weights only: no retry, no breaker."},
				{Name: "gateway: retry only", Mode: "gateway", Members: weights(90, 5, 5), Attempts: 3,
					Description: "Retry on another region (never the one that just refused), nothing remembered."},
				{Name: "gateway: APIM-style sin bin", Mode: "gateway", Members: weights(90, 5, 5), Attempts: 3, Breaker: sinBin(3),
					Description: "Retry, and a region leaves the pool for 60 s after 3 refusals, then one probe."},
				{Name: "gateway: APIM-style priority pool", Mode: "gateway", Members: priorities(1, 2, 2), Attempts: 3, Breaker: sinBin(1),
					Description: "uksouth first, the others only while it is out of the pool; out for 60 s after its first refusal."},
				{Name: "gateway: switchover, quota-blind", Mode: "gateway", Members: weights(90, 5, 5), Attempts: 3, Breaker: switchoverBin(),
					Description: "The defaults before quota awareness: retry, and a region that refused 5 times in 30 s is out until its Retry-After."},
				{Name: "gateway: switchover defaults", Mode: "gateway", Members: weights(90, 5, 5), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
					Description: "As above, and quota-aware: no call goes to a region whose rate-limit headers say it would refuse it; a retry budget."},
				{Name: "client: weighted, retry", Mode: "client", Members: weights(90, 5, 5), Attempts: 3,
					Description: "No gateway: the caller picks by weight and retries on another region."},
				{Name: "client: weighted, cool-down", Mode: "client", Members: weights(90, 5, 5), Attempts: 3, Breaker: sinBin(1),
					Description: "As above, and the caller skips a region for 60 s after it refused."},
				{Name: "client: sequential", Mode: "client", Members: priorities(1, 2, 3), Attempts: 3,
					Description: "The caller tries uksouth, then the next region, remembering nothing."},
				{Name: "client: sequential, cool-down", Mode: "client", Members: priorities(1, 2, 3), Attempts: 3, Breaker: sinBin(1),
					Description: "As above, skipping a region for 60 s after it refused."},
			},
		},
		{
			Name:  "every-region-short",
			Title: "Every region short",
			Description: "6 requests a second against three regions that can serve 3 between them: the best any setup " +
				"can do is about 50%. How close does each get, and how fast do refusals come back?",
			// 10x, not 50x: a quota slice (1 s) must outlast a call (0.3 to
			// 0.5 s) for a quota-aware gateway to hear a window's figures
			// before it ends, as on Azure (10 s slices).
			Compress: 10,
			Regions:  benchmarkRegions(60, 60000),
			Load:     Load{Rate: 6, Duration: d(steady), MaxTokens: 5, Timeout: d(30 * time.Second)},
			Setups: []Setup{
				{Name: "gateway: no failover", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 1,
					Description: "Even split, no retry, no breaker."},
				{Name: "gateway: APIM-style sin bin", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: sinBin(1),
					Description: "Retry on another region; a region that refused is out of the pool for 60 s, then one probe."},
				{Name: "gateway: switchover, quota-blind", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(),
					Description: "The defaults before quota awareness: retry; a region that refused 5 times in 30 s is out until its Retry-After."},
				{Name: "gateway: switchover defaults", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
					Description: "As above, and quota-aware: a region whose headers say it has nothing left gets no call; when none has, 429 at once."},
				{Name: "client: weighted, cool-down", Mode: "client", Members: weights(1, 1, 1), Attempts: 3, Breaker: sinBin(1),
					Description: "No gateway: pick at random, retry, skip a refusing region for 60 s."},
				{Name: "client: wait for Retry-After", Mode: "client", Members: weights(1, 1, 1), Attempts: 3, WaitRetryAfter: true,
					Description: "The caller sleeps as long as Retry-After asks and tries again (up to its 30 s timeout)."},
				{Name: "gateway: switchover, patient callers", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
					MaxWait:     d(90 * time.Second),
					Description: "The defaults, and callers that send x-switchover-max-wait: 90s: the gateway holds them until quota returns, first come first served."},
			},
		},
		{
			Name:  "every-region-short-repeats",
			Title: "Every region short, with repeats",
			Description: "As in Every region short, 6 requests a second against three regions that can serve 3 between " +
				"them; and 30% of the requests repeat an earlier one byte for byte (a retry loop, an agent asking " +
				"again, a dashboard refreshing the same summary). Without a cache every repeat takes quota from a " +
				"request that needs it; with the response cache and coalescing a repeat of an answered request " +
				"costs no model call.",
			Targets: "with the cache, more requests answered than the same setup without it, at no more model calls " +
				"per request (fewer where every request costs a call; a quota-aware gateway already calls only as much " +
				"as the quota holds). from cache: the answers given with no model call (x-switchover-cache hit or coalesced).",
			Compress: 10, // as every-region-short: a quota slice outlasts a call
			Regions:  benchmarkRegions(60, 60000),
			Load:     Load{Rate: 6, Duration: d(2 * time.Minute), MaxTokens: 5, Timeout: d(30 * time.Second), Repeat: 0.3},
			Setups:   repeatSetups(),
		},
		{
			Name:  "slow-tail",
			Title: "Slow tail",
			Description: "uksouth (priority 1) is quick at the median but its tail is slow: p95 three times its median " +
				"(300 ms, lognormal spread 0.67), p99 nearly five. swedencentral (priority 2) is steady (365 ms, spread 0.3). " +
				"Nothing fails, so failover never starts: only a hedge can help the slowest callers.",
			Compress: 8,
			Regions: []Region{
				{Name: "uksouth", Latency: d(300 * time.Millisecond), Spread: 0.67},
				{Name: "swedencentral", Latency: d(365 * time.Millisecond), Spread: 0.3},
			},
			Load:    Load{Rate: 4, Duration: d(240 * time.Second), MaxTokens: 5, Timeout: d(30 * time.Second)},
			Targets: "hedged: client p99 within 1.5x the healthy region's own p99, at <= 10% extra upstream calls (calls/req <= 1.10).",
			Setups: []Setup{
				{Name: "gateway: healthy region alone", Mode: "gateway", Members: []Member{{Region: "swedencentral", Priority: 1}}, Attempts: 3,
					Breaker: switchoverBin(), QuotaAware: true,
					Description: "The reference: every request to swedencentral, the steady region."},
				{Name: "gateway: switchover defaults", Mode: "gateway", Members: []Member{{Region: "uksouth", Priority: 1}, {Region: "swedencentral", Priority: 2}}, Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
					Description: "uksouth first, swedencentral on failure: no hedging (off by default)."},
				{Name: "gateway: switchover, hedged at p90", Mode: "gateway", Members: []Member{{Region: "uksouth", Priority: 1}, {Region: "swedencentral", Priority: 2}}, Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
					Hedge:       &Hedge{After: "p90", Share: 0.1},
					Description: "As above with hedge: {after: p90, share: 0.1}: a call slower than uksouth's own 90th percentile gets a second one on swedencentral; the first answer wins."},
			},
		},
		{
			Name:  "retry-storm",
			Title: "Retry storm",
			Description: "Every region answers 500 for 30 s of a minute. Retries cannot help while it lasts; " +
				"how much extra load does each setup send the regions on top of the traffic?",
			Compress: 2,
			Regions:  benchmarkRegions(0, 0),
			Load:     Load{Rate: 10, Duration: d(60 * time.Second), MaxTokens: 5, Timeout: d(30 * time.Second)},
			Faults: []Fault{
				{Region: "uksouth", Mode: "error500", From: d(15 * time.Second), To: d(45 * time.Second)},
				{Region: "westeurope", Mode: "error500", From: d(15 * time.Second), To: d(45 * time.Second)},
				{Region: "swedencentral", Mode: "error500", From: d(15 * time.Second), To: d(45 * time.Second)},
			},
			Targets: "with the retry budget, at most 1.2 calls per request plus the floor (3 retries a second) during the storm, against 3 without.",
			Setups: []Setup{
				{Name: "gateway: retry x3, no budget", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3,
					Description: "Every failure retried on the next region, up to 3 calls per request; no breaker, no budget."},
				{Name: "gateway: retry x3, retry budget", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, QuotaAware: true,
					Description: "The same, with switchover's default retry budget (retries at most 20% of requests over 10 s, plus 3 a second); no breaker."},
				{Name: "gateway: retry budget and breaker", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
					Description: "The retry budget and switchover's breaker rule without its health probes: regions that fail 5 times in 30 s are benched for the 60 s trip, which outlasts the storm."},
				{Name: "client: retry x3", Mode: "client", Members: weights(1, 1, 1), Attempts: 3,
					Description: "No gateway: each caller retries on another region, up to 3 calls."},
			},
		},
		{
			Name:  "region-outage",
			Title: "Region outage",
			Description: "westeurope (priority 1) stops answering with requests in flight, then recovers; " +
				"swedencentral is priority 2. The Azure OpenAI multi-region game day behind API Management lost 21 requests to a 120 s forward timeout and was " +
				"back on the primary 6 s after its circuit closed.",
			Compress: 10,
			Regions: []Region{
				{Name: "westeurope", Latency: d(520 * time.Millisecond), Spread: 0.3},
				{Name: "swedencentral", Latency: d(700 * time.Millisecond), Spread: 0.3},
			},
			Load:   Load{Rate: 4, Duration: d(120 * time.Second), MaxTokens: 20, Stream: true, Timeout: d(10 * time.Second)},
			Faults: []Fault{{Region: "westeurope", Mode: "blackhole", From: d(30 * time.Second), To: d(80 * time.Second)}},
			Outage: "westeurope",
			Setups: []Setup{
				{Name: "gateway: first-byte timeout", Mode: "gateway", Attempts: 2,
					Members:                westeuropeFirst(),
					Breaker:                apimRule(),
					StreamFirstByteTimeout: d(2 * time.Second), Timeout: d(60 * time.Second),
					Description: "API Management's rule (5 failures in 30 s, 60 s trip) with a 2 s first-byte timeout."},
				{Name: "gateway: forward timeout only", Mode: "gateway", Attempts: 2,
					Members:                westeuropeFirst(),
					Breaker:                apimRule(),
					StreamFirstByteTimeout: d(15 * time.Second), Timeout: d(15 * time.Second),
					Description: "The same rule with only a 15 s attempt timeout (the API Management game day had 120 s), as without a first-byte timeout."},
				{Name: "client: sequential, cool-down", Mode: "client", Attempts: 2,
					Members:                westeuropeFirst(),
					Breaker:                &Breaker{Failures: 1, Window: d(30 * time.Second), Trip: d(60 * time.Second)},
					StreamFirstByteTimeout: d(2 * time.Second), Timeout: d(60 * time.Second),
					Description: "No gateway: try westeurope then swedencentral, skip a failed region for 60 s, 2 s first-byte timeout."},
			},
		},
		{
			Name:  "bursts",
			Title: "Bursts",
			Description: "200 requests from 20 callers as fast as possible against three small token quotas " +
				"(10,000 tokens a minute each): every region runs out within seconds. Does any setting help when demand " +
				"beats all the quota at once?",
			Compress: 1,
			Regions:  benchmarkRegions(0, 10000),
			Load:     Load{Concurrency: 20, Total: 200, MaxTokens: 128, Timeout: d(30 * time.Second)},
			Setups: []Setup{
				{Name: "gateway: even split", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 1,
					Description: "No retry, no breaker."},
				{Name: "gateway: breaker only", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 1, Breaker: sinBin(3),
					Description: "A region leaves the pool after 3 refusals; nothing retries onto the others."},
				{Name: "gateway: switchover defaults", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true,
					Description: "Retry on another region, and switchover's default breaker."},
				{Name: "client: sequential", Mode: "client", Members: priorities(1, 2, 3), Attempts: 3,
					Description: "The caller walks the regions in order after each refusal, remembering nothing."},
			},
		},
		{
			Name:  "outage-default-timeouts",
			Title: "Outage with default timeouts",
			Description: "westeurope (priority 1) stops answering for 60 s with requests in flight; uksouth and " +
				"swedencentral are priority 2 with quota to spare. Non-streamed requests from callers that give up " +
				"after 60 s, through switchover as a user who writes the README's short config gets it: the shipped " +
				"timeouts and breaker (issue 9).",
			Targets: "≤ 1% of the requests in flight during the outage fail; traffic leaves westeurope within 10 s " +
				"(benched after); westeurope takes traffic again within 15 s of recovery (back after).",
			Compress: 1,
			Regions:  benchmarkRegions(1000, 1000000),
			Load:     Load{Rate: 2, Duration: d(140 * time.Second), MaxTokens: 20, Timeout: d(60 * time.Second)},
			Faults:   []Fault{{Region: "westeurope", Mode: "blackhole", From: d(30 * time.Second), To: d(90 * time.Second)}},
			Outage:   "westeurope",
			Setups: []Setup{
				{Name: "gateway: switchover defaults", Mode: "gateway", Defaults: true, Members: outageMembers(),
					Description: "No timeouts, breaker or retry in the configuration: switchover's shipped defaults."},
				{Name: "gateway: APIM-style, 10 s timeout", Mode: "gateway", Members: outageMembers(), Attempts: 3,
					Breaker: apimRule(), FirstByteTimeout: d(10 * time.Second),
					Description: "API Management's rule (5 failures in 30 s bench a region for 60 s, then one probe) with a 10 s forward timeout, retrying on priority 2."},
			},
		},
		{
			Name:  "misconfigured-region",
			Title: "Misconfigured region",
			Description: "westeurope's key has been revoked (401 to every call), or its deployment deleted (404), for " +
				"the whole run; uksouth and swedencentral are healthy. An even split at 2 req/s. The 401 and 404 are " +
				"the region's, not the caller's: another region would answer.",
			Targets:  "every request answered by a healthy region, at close to 1 model call per request once westeurope is out.",
			Compress: 1,
			Regions:  benchmarkRegions(300, 300000),
			Load:     Load{Rate: 2, Duration: d(60 * time.Second), MaxTokens: 16, Timeout: d(30 * time.Second)},
			Setups: []Setup{
				{Name: "gateway: switchover defaults, revoked key", Mode: "gateway", Defaults: true, Members: weights(1, 1, 1),
					Faults:      misconfigured("unauthorized"),
					Description: "switchover's shipped defaults; westeurope answers 401 to every call."},
				{Name: "gateway: switchover defaults, deleted deployment", Mode: "gateway", Defaults: true, Members: weights(1, 1, 1),
					Faults:      misconfigured("not_found"),
					Description: "switchover's shipped defaults; westeurope answers 404 DeploymentNotFound to every call."},
				{Name: "gateway: APIM-style sin bin, revoked key", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: sinBin(1),
					Faults:      misconfigured("unauthorized"),
					Description: "Retry on another region and a 60 s bench after one 429 or 5xx, as API Management is usually set up: a 401 is neither."},
			},
		},
		{
			Name:  "impossible-requests",
			Title: "Impossible requests",
			Description: "Another caller sends 5 requests in the first seconds whose max_tokens (1,000,000) is over every " +
				"region's whole token limit (30,000 a minute): each region must refuse them with a 429, however long they " +
				"wait. Meanwhile the main caller, with its own key, sends small requests at 0.5 req/s for a minute. Do " +
				"the impossible requests bench the regions for everyone?",
			Targets:  "the main key gets ≥ 29 of its 30 requests answered.",
			Compress: 1,
			Regions:  benchmarkRegions(60, 30000),
			// Total makes it exactly 30: an arrival due as the minute ends
			// could otherwise be a 31st.
			Load:  Load{Rate: 0.5, Duration: d(60 * time.Second), Total: 30, MaxTokens: 16, Timeout: d(30 * time.Second)},
			Noise: &Load{Rate: 2, Total: 5, MaxTokens: 1000000, Timeout: d(30 * time.Second)},
			Setups: []Setup{
				{Name: "gateway: switchover defaults", Mode: "gateway", Defaults: true, Members: weights(1, 1, 1),
					Description: "switchover's shipped defaults: retry, and its breaker on every region."},
				{Name: "gateway: APIM-style sin bin", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: sinBin(1),
					Description: "Retry on another region; a region that refused once is out of the pool for 60 s, then one probe."},
			},
		},
		{
			Name:  "noisy-neighbour",
			Title: "Noisy neighbour",
			Description: "Two teams share three regions of 60 requests a minute each (3 req/s in all). The main team " +
				"sends 1 req/s for a minute; a batch job on another team's key sends 5 req/s at the same time, far past " +
				"what the regions hold. Without per-team limits the batch job takes the quota and the main team's " +
				"requests are refused with it; with the batch key held to 60 requests a minute (keys[].rpm) the " +
				"regions keep room for the main team, and the batch job is refused at the gateway, before any region " +
				"counts it.",
			Targets:  "with the batch key limited, the main team gets ≥ 99% of its 60 requests answered.",
			Compress: 1,
			Regions:  benchmarkRegions(60, 300000),
			Load:     Load{Rate: 1, Duration: d(60 * time.Second), Total: 60, MaxTokens: 16, Timeout: d(30 * time.Second)},
			Noise:    &Load{Rate: 5, Duration: d(60 * time.Second), Total: 300, MaxTokens: 16, Timeout: d(30 * time.Second)},
			Setups: []Setup{
				{Name: "gateway: switchover defaults, no per-key limits", Mode: "gateway", Defaults: true, Members: weights(1, 1, 1),
					Description: "switchover's shipped defaults; both keys unlimited."},
				{Name: "gateway: switchover defaults, batch key at 60 rpm", Mode: "gateway", Defaults: true, Members: weights(1, 1, 1),
					NoiseLimits: &KeyLimits{RPM: 60},
					Description: "switchover's shipped defaults; the batch job's key has rpm: 60."},
			},
		},
		{
			Name:  "regions-taking-turns",
			Title: "Regions taking turns to fail",
			Description: "westeurope (priority 1) and swedencentral (priority 2) take turns to fail for 10 s each, for " +
				"80 s, each time another way (5xx, reset connections, a hang); uksouth is not in the pool. One of the " +
				"two answers at every moment, but each is benched again and again, and a region benched again needs " +
				"more passing health probes to come back early. Plain requests at 5 req/s for 90 s. Does the pool keep " +
				"answering while both regions are benched?",
			Targets: "≥ 90% answered: one of the two regions answers at every moment, so each turn should cost only the " +
				"second or two it takes to see one region fail and the other come back.",
			Compress: 1,
			Regions:  benchmarkRegions(1000, 1000000),
			Load:     Load{Rate: 5, Duration: d(90 * time.Second), MaxTokens: 16, Timeout: d(30 * time.Second)},
			Faults:   takingTurns(10*time.Second, "error500", "reset", "blackhole", "error500", "reset", "blackhole", "error500", "reset"),
			Setups: []Setup{
				{Name: "gateway: switchover defaults", Mode: "gateway", Defaults: true, Members: westeuropeFirst(),
					Description: "No timeouts, breaker or retry in the configuration: switchover's shipped defaults."},
				{Name: "gateway: APIM-style, 10 s timeout", Mode: "gateway", Members: westeuropeFirst(), Attempts: 2,
					Breaker: apimRule(), FirstByteTimeout: d(10 * time.Second),
					Description: "API Management's rule (5 failures in 30 s bench a region for 60 s, then one probe) with a 10 s forward timeout, retrying on priority 2."},
				{Name: "client: sequential, cool-down", Mode: "client", Members: westeuropeFirst(), Attempts: 2,
					Breaker: &Breaker{Failures: 1, Window: d(30 * time.Second), Trip: d(60 * time.Second)}, FirstByteTimeout: d(10 * time.Second),
					Description: "No gateway: try westeurope then swedencentral, skip a failed region for 60 s, 10 s first-byte timeout."},
			},
		},
	}
}
