// Package load is switchover's load generator: open-model (a fixed arrival
// rate, whatever the responses do) and closed-model (N callers) runs of
// OpenAI-style requests against the gateway, a region directly, or a
// client-side failover strategy built on the routing engine; and the
// summary a failover design is judged by: success, latency percentiles,
// goodput, failovers and model calls per request.
package load

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Sample is the record of one request.
type Sample struct {
	// Start is when the request was sent, from the start of the run.
	Start time.Duration
	// Latency runs until the whole response was read.
	Latency time.Duration
	// FirstByte runs until the response headers, or for a stream its first
	// event.
	FirstByte time.Duration
	// Status is the HTTP status, 0 when there was no response.
	Status int
	// OK is true for HTTP 200 with a valid body (a completion with content,
	// or a stream that ended with [DONE] and no error event).
	OK bool
	// Failure names why a request that is not OK failed: the status, or
	// "timeout", "connection", "invalid_body", "stream_error".
	Failure string
	// Backend is the x-switchover-backend that answered, if any.
	Backend string
	// Failover is the x-switchover-failover header.
	Failover bool
	// Attempts is the x-switchover-attempts header (0 when absent).
	Attempts int
	// Cache is the x-switchover-cache header: "hit" or "coalesced" when
	// the gateway's response cache answered without a model call, "miss"
	// or "bypass"; empty when the call was not cached.
	Cache string
	// Waited is the time a wait-for-Retry-After caller slept.
	Waited time.Duration
	// RetryAfter is the Retry-After of a refusal (Retry-After-Ms when
	// given), 0 when it had none or the request was answered.
	RetryAfter time.Duration
}

// FromCache reports whether the gateway's response cache answered the
// request with no model call: x-switchover-cache hit or coalesced.
func (s Sample) FromCache() bool { return s.Cache == "hit" || s.Cache == "coalesced" }

// End is when the request finished, from the start of the run.
func (s Sample) End() time.Duration { return s.Start + s.Latency }

// Percentiles of a latency distribution, computed exactly from the sorted
// sample (nearest rank), never from an average.
type Percentiles struct {
	N   int
	P50 time.Duration
	P95 time.Duration
	P99 time.Duration
	Max time.Duration
}

// MarshalJSON writes the percentiles in milliseconds.
func (p Percentiles) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		N   int     `json:"n"`
		P50 float64 `json:"p50_ms"`
		P95 float64 `json:"p95_ms"`
		P99 float64 `json:"p99_ms"`
		Max float64 `json:"max_ms"`
	}{p.N, ms(p.P50), ms(p.P95), ms(p.P99), ms(p.Max)})
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// NewPercentiles computes percentiles of ds. ds is not modified.
func NewPercentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(i, 0)]
	}
	return Percentiles{N: len(s), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: s[len(s)-1]}
}

// Summary is what a run comes to.
type Summary struct {
	// Requests is how many requests were sent; Dropped how many arrivals
	// of an open-model run were not sent because MaxInFlight requests were
	// already waiting.
	Requests  int `json:"requests"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Dropped   int `json:"dropped,omitempty"`
	// SuccessRate is Succeeded/Requests, 0..1.
	SuccessRate float64 `json:"success_rate"`
	// Failures counts failed requests by Sample.Failure.
	Failures map[string]int `json:"failures,omitempty"`
	// Latency is over every request; Success over the successful ones;
	// FailedLatency over the failed ones ("how fast refusals come back");
	// FirstByte over the successful ones.
	Latency       Percentiles `json:"latency"`
	Success       Percentiles `json:"success_latency"`
	FailedLatency Percentiles `json:"failed_latency"`
	FirstByte     Percentiles `json:"first_byte"`
	// Duration is from the first send to the last answer.
	Duration        time.Duration `json:"-"`
	DurationSeconds float64       `json:"duration_s"`
	// Throughput is requests finished per second; Goodput successful
	// requests per second.
	Throughput float64 `json:"throughput_rps"`
	Goodput    float64 `json:"goodput_rps"`
	// Failovers counts responses with x-switchover-failover: true, but
	// not answers from the cache (which replay the header of the answer
	// they repeat: no failover happened for them).
	Failovers int `json:"failovers"`
	// FromCache counts the answers the gateway's response cache gave
	// without a model call (x-switchover-cache: hit or coalesced).
	FromCache int `json:"from_cache,omitempty"`
	// ByBackend counts successful requests by the backend that answered.
	ByBackend map[string]int `json:"by_backend,omitempty"`
	// Upstream is set when the run counted the model calls it caused.
	Upstream *Upstream `json:"upstream,omitempty"`
}

// Upstream counts the model calls behind a run, read from the simulator.
type Upstream struct {
	Calls    int64 `json:"calls"`
	Refused  int64 `json:"refused"`
	Errors   int64 `json:"errors"`
	Answered int64 `json:"answered"`
	// Probes are the health checks and probes among Calls, where known
	// (a game day's gateway tells them): calls no request made.
	Probes int64 `json:"probes,omitempty"`
	// CallsPerRequest is (Calls - Probes) / Summary.Requests: the calls
	// the requests made.
	CallsPerRequest float64 `json:"calls_per_request"`
}

// Summarize computes the summary of samples.
func Summarize(samples []Sample, dropped int) Summary {
	s := Summary{Requests: len(samples), Dropped: dropped, Failures: map[string]int{}, ByBackend: map[string]int{}}
	var all, okLat, failLat, fb []time.Duration
	var first, last time.Duration = -1, 0
	for _, x := range samples {
		all = append(all, x.Latency)
		if first < 0 || x.Start < first {
			first = x.Start
		}
		last = max(last, x.End())
		if x.FromCache() {
			s.FromCache++
		} else if x.Failover {
			s.Failovers++
		}
		if x.OK {
			s.Succeeded++
			okLat = append(okLat, x.Latency)
			fb = append(fb, x.FirstByte)
			if x.Backend != "" {
				s.ByBackend[x.Backend]++
			}
			continue
		}
		s.Failed++
		failLat = append(failLat, x.Latency)
		s.Failures[x.Failure]++
	}
	if s.Requests > 0 {
		s.SuccessRate = float64(s.Succeeded) / float64(s.Requests)
		s.Duration = last - first
		s.DurationSeconds = math.Round(s.Duration.Seconds()*1000) / 1000
	}
	if secs := s.Duration.Seconds(); secs > 0 {
		s.Throughput = float64(s.Requests) / secs
		s.Goodput = float64(s.Succeeded) / secs
	}
	s.Latency, s.Success, s.FailedLatency, s.FirstByte = NewPercentiles(all), NewPercentiles(okLat), NewPercentiles(failLat), NewPercentiles(fb)
	return s
}

// FailureKinds returns the failure names in a stable order: statuses
// ascending, then the others alphabetically.
func (s Summary) FailureKinds() []string {
	var out []string
	for k := range s.Failures {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, aerr := strconv.Atoi(out[i])
		b, berr := strconv.Atoi(out[j])
		switch {
		case aerr == nil && berr == nil:
			return a < b
		case aerr == nil:
			return true
		case berr == nil:
			return false
		}
		return out[i] < out[j]
	})
	return out
}
