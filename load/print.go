package load

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// WriteSummary prints a run's summary for a terminal. firstByte adds the
// time to first byte, which matters for streams.
func WriteSummary(w io.Writer, s Summary, firstByte bool) {
	fmt.Fprintf(w, "requests     %d sent in %s", s.Requests, s.Duration.Round(time.Millisecond))
	if s.Dropped > 0 {
		fmt.Fprintf(w, " (%d arrivals dropped: too many in flight)", s.Dropped)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "success      %.2f%% (%d answered, %d failed)\n", 100*s.SuccessRate, s.Succeeded, s.Failed)
	if s.Failed > 0 {
		var parts []string
		for _, k := range s.FailureKinds() {
			parts = append(parts, fmt.Sprintf("%s: %d", k, s.Failures[k]))
		}
		fmt.Fprintf(w, "failures     %s\n", strings.Join(parts, ", "))
	}
	pr := func(name string, p Percentiles) {
		if p.N == 0 {
			return
		}
		fmt.Fprintf(w, "%-12s p50 %s  p95 %s  p99 %s  max %s  (n=%d)\n", name, short(p.P50), short(p.P95), short(p.P99), short(p.Max), p.N)
	}
	pr("latency", s.Latency)
	pr("  answered", s.Success)
	pr("  failed", s.FailedLatency)
	if firstByte {
		pr("first byte", s.FirstByte)
	}
	fmt.Fprintf(w, "throughput   %.2f req/s\n", s.Throughput)
	fmt.Fprintf(w, "goodput      %.2f answered/s\n", s.Goodput)
	fmt.Fprintf(w, "failovers    %d\n", s.Failovers)
	if s.FromCache > 0 {
		fmt.Fprintf(w, "from cache   %d answered with no model call (x-switchover-cache hit or coalesced)\n", s.FromCache)
	}
	if len(s.ByBackend) > 0 {
		var names []string
		for n := range s.ByBackend {
			names = append(names, n)
		}
		sort.Strings(names)
		var parts []string
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("%s %d", n, s.ByBackend[n]))
		}
		fmt.Fprintf(w, "answered by  %s\n", strings.Join(parts, ", "))
	}
	if u := s.Upstream; u != nil {
		fmt.Fprintf(w, "upstream     %d model calls (%.2f per request), %d refused, %d errors\n", u.Calls, u.CallsPerRequest, u.Refused, u.Errors)
	}
}

func short(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
