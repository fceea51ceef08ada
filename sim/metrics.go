package sim

import (
	"github.com/prometheus/client_golang/prometheus"
)

var allModes = []FaultMode{
	FaultNone, FaultDown, FaultOverloaded, FaultError500, FaultBlackhole, FaultReset, FaultSlow,
	FaultStallStream, FaultDropStream, FaultQuota, FaultErrorRate,
}

// collector exports every deployment's counters at scrape time, so the
// metrics and [Sim.Stats] never disagree and a reset zeroes both. It is
// safe for concurrent use.
type collector struct {
	s        *Sim
	requests *prometheus.Desc
	tokens   *prometheus.Desc
	inFlight *prometheus.Desc
	fault    *prometheus.Desc
}

var _ prometheus.Collector = (*collector)(nil)

func newCollector(s *Sim) *collector {
	return &collector{
		s: s,
		requests: prometheus.NewDesc("switchover_sim_requests_total",
			"Requests handled by a simulated deployment, by result (ok, refused, error, filtered, rejected, abandoned).",
			[]string{"deployment", "region", "result"}, nil),
		tokens: prometheus.NewDesc("switchover_sim_tokens_total",
			"Estimated tokens charged against a simulated deployment's quota.",
			[]string{"deployment", "region"}, nil),
		inFlight: prometheus.NewDesc("switchover_sim_in_flight",
			"Requests a simulated deployment is handling now.",
			[]string{"deployment", "region"}, nil),
		fault: prometheus.NewDesc("switchover_sim_fault",
			"1 for the fault mode in force on a simulated deployment, 0 for the others.",
			[]string{"deployment", "region", "mode"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.tokens
	ch <- c.inFlight
	ch <- c.fault
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	now := c.s.clock.Now()
	for _, d := range c.s.deps {
		name, region := d.cfg.Name, d.cfg.Region
		st := d.counters.snapshot()
		byOutcome := [numOutcomes]int64{st.Answered, st.Refused, st.Errors, st.Filtered, st.Rejected, st.Abandoned}
		for o, n := range byOutcome {
			ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(n), name, region, outcome(o).String())
		}
		ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, float64(st.Tokens), name, region)
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(st.InFlight), name, region)
		mode := d.faultAt(now).Mode
		for _, m := range allModes {
			v := 0.0
			if m == mode {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.fault, prometheus.GaugeValue, v, name, region, string(m))
		}
	}
}
