package deploy

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/metrics"
	"github.com/switchover-gw/switchover/notify"
	"github.com/switchover-gw/switchover/route"
)

// targetLabels are the labels Prometheus adds to every series it scrapes.
var targetLabels = []string{"job", "instance"}

// family is one metric family the gateway exports.
type family struct {
	typ    string // as client_model names it: COUNTER, GAUGE, HISTOGRAM
	labels []string
}

// schema is every metric family the gateway exports, by name, with the
// values the gateway's code can give some of their labels.
type schema struct {
	families map[string]family
	// values lists, for some metrics' labels, every value the gateway
	// gives them, so that code="500" (the label holds "5xx") is caught.
	values map[string]map[string][]string
}

// exportedSchema learns the metric families and their label names from the
// gateway's own registry: it records one sample of everything through the
// public recording methods and gathers. Names() is the list of families;
// one that has no sample after feed fails the test, so a new metric cannot
// slip past the check of the rules and the dashboard.
func exportedSchema(t *testing.T) *schema {
	t.Helper()
	m := metrics.New()
	feed(m)
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	s := &schema{families: map[string]family{}, values: labelValues()}
	names := m.Names()
	if len(names) == 0 {
		t.Fatal("metrics.New().Names() is empty")
	}
	for _, mf := range mfs {
		if !slices.Contains(names, mf.GetName()) {
			continue // Go runtime and process collectors
		}
		seen := map[string]bool{}
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				seen[lp.GetName()] = true
			}
		}
		f := family{typ: mf.GetType().String()}
		for l := range seen {
			f.labels = append(f.labels, l)
		}
		sort.Strings(f.labels)
		s.families[mf.GetName()] = f
	}
	for _, n := range names {
		if _, ok := s.families[n]; !ok {
			t.Errorf("metric %s has no sample after feed(), so its labels are unknown: record one in feed (deploy/schema_test.go)", n)
		}
	}
	return s
}

// feed records one sample of every metric through the public methods.
func feed(m *metrics.Metrics) {
	backend := &route.Backend{Name: "weu", Region: "westeurope"}
	m.AddBackend("weu", "westeurope", "azure")
	m.Request("chat", "weu", 200, time.Second, 100*time.Millisecond)
	m.Observe(route.Event{Kind: route.EventAttempt, Pool: "chat", Backend: backend,
		Attempt: &route.Attempt{Backend: "weu", Region: "westeurope", Status: 200, Duration: time.Second}})
	m.Observe(route.Event{Kind: route.EventFailover, Pool: "chat", Backend: backend, From: "sec", To: "weu", Reason: route.ReasonRateLimited})
	m.Observe(route.Event{Kind: route.EventBodyError, Pool: "chat", Backend: backend, Err: errors.New("stream broke")})
	m.Observe(route.Event{Kind: route.EventModel, Pool: "chat", Backend: backend, Model: "gpt-4o-2024-08-06"})
	m.Observe(route.Event{Kind: route.EventMisconfigured, Pool: "chat", Backend: backend, Reason: route.ReasonMisconfigured,
		Attempt: &route.Attempt{Backend: "weu", Status: 401, Reason: route.ReasonMisconfigured}})
	m.Observe(route.Event{Kind: route.EventUnresponsive, Pool: "chat", Backend: backend, Reason: route.ReasonUnresponsive, Err: errors.New("check failed")})
	m.Observe(route.Event{Kind: route.EventProbe, Backend: backend, Err: errors.New("no answer")})
	m.Observe(route.Event{Kind: route.EventAttempt, Pool: "chat", Backend: backend,
		Attempt: &route.Attempt{Backend: "weu", Region: "westeurope", Reason: route.ReasonFirstByteTimeout, Retryable: true, Abandoned: true, Duration: time.Second}})
	m.Transition(breaker.Transition{Name: "weu", From: breaker.Closed, To: breaker.Open})
	m.Drained("weu", false)
	m.Active("chat", []string{"weu"}, map[string]bool{"weu": true})
	m.Probe("weu", "ok", 50*time.Millisecond)
	m.Notification("slack", "failover", notify.Sent.String())
	m.Reload("ok")
	m.TLSCertificate("api", "", time.Unix(1800000000, 0))
	m.Admin("drain")
	m.LogLineDropped()
	m.Refused("too_many_concurrent_requests")
	m.Observe(route.Event{Kind: route.EventQuotaHeld, Pool: "chat", Backend: backend})
	m.Observe(route.Event{Kind: route.EventRetryBudget, Pool: "chat", Backend: backend})
	m.Observe(route.Event{Kind: route.EventHedge, Pool: "chat", Backend: backend, From: "other", Hedge: route.HedgeWon})
	m.FleetStore(true)
	m.FleetDropped()
	m.BudgetFallback()
	m.Tokens("chat", "weu", "gpt-4o-2024-08-06", "app", 100, 20, 10, 5, 0.0004, true)
	m.KeyRefused("app", "rate_limit_exceeded", "requests per minute")
	m.BudgetAlert("key", "0.8")
	m.UsageDropped(1)
	m.StoreUp(true)
	m.StoreError("write")
	m.Observe(route.Event{Kind: route.EventFallback, Pool: "chat", From: "chat", To: "backup", Cause: route.FallbackExhausted})
	m.Observe(route.Event{Kind: route.EventQueued, Pool: "chat", Queue: 1})
	m.Observe(route.Event{Kind: route.EventDequeued, Pool: "chat", Queue: 0, Waited: 2 * time.Second})
	m.CacheResult("chat", "hit", 100)
	m.CacheStored("chat", 100)
	m.CacheEvicted("chat", "size")
	m.CacheSaved("chat", 0.001)
	m.CacheStoreError("get")
}

// labelValues is every value the gateway's code gives some labels, taken
// from the code that sets them where it is exported.
func labelValues() map[string]map[string][]string {
	var codes []string
	for status := 0; status < 600; status++ {
		if c := metrics.CodeClass(status); !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	var states []string
	for _, st := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
		states = append(states, st.String())
	}
	results := slices.Clone(codes)
	for _, r := range []route.Reason{route.ReasonFirstByteTimeout, route.ReasonTimeout, route.ReasonConnect,
		route.ReasonConnection, route.ReasonCanceled, route.ReasonAuth, route.ReasonInvalidResponse, route.ReasonStreamError,
		route.ReasonUnresponsive} {
		results = append(results, string(r))
	}
	return map[string]map[string][]string{
		"switchover_requests_total":            {"code": codes},
		"switchover_upstream_attempts_total":   {"result": results},
		"switchover_breaker_state":             {"state": states},
		"switchover_breaker_transitions_total": {"from": states, "to": states},
		"switchover_notifications_total":       {"result": {notify.Sent.String(), notify.Failed.String(), notify.Dropped.String()}},
		// gateway.Reload records "ok" or "invalid" (the metric's help says so).
		"switchover_config_reloads_total":   {"result": {"ok", "invalid"}},
		"switchover_requests_refused_total": {"code": metrics.RefusalCodes()},
		// gateway's listeners' TLS: api, admin, metrics; ok or invalid.
		"switchover_tls_certificate_reloads_total":            {"listener": {"api", "admin", "metrics"}, "result": {"ok", "invalid"}},
		"switchover_tls_certificate_expiry_timestamp_seconds": {"listener": {"api", "admin", "metrics"}},
	}
}

// series returns the labels of a series name: a family's own, or a classic
// histogram's _bucket (with le), _sum or _count. Target labels included.
func (s *schema) series(name string) (labelSet, bool) {
	withTarget := func(f family, extra ...string) labelSet {
		ls := labelSet{}
		for _, l := range slices.Concat(f.labels, targetLabels, extra) {
			ls[l] = true
		}
		return ls
	}
	if f, ok := s.families[name]; ok {
		return withTarget(f), true // a native histogram is queried by its own name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if f, ok := s.families[base]; ok && f.typ == "HISTOGRAM" {
			if suffix == "_bucket" {
				return withTarget(f, "le"), true
			}
			return withTarget(f), true
		}
	}
	return nil, false
}

// knownValues returns the values a metric's label can take, or nil when
// they are open (backend and pool names, reasons…).
func (s *schema) knownValues(metric, label string) []string {
	for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(metric, suffix); ok {
			if v := s.values[base][label]; v != nil {
				return v
			}
		}
	}
	return nil
}

func TestSchemaKnowsEveryMetric(t *testing.T) {
	s := exportedSchema(t)
	for _, name := range []string{"switchover_requests_total", "switchover_request_duration_seconds_bucket", "switchover_pool_active_backend"} {
		if _, ok := s.series(name); !ok {
			t.Errorf("schema does not know %s", name)
		}
	}
	if ls, _ := s.series("switchover_requests_total"); !ls["pool"] || !ls["backend"] || !ls["code"] || !ls["instance"] {
		t.Errorf("switchover_requests_total labels = %v, want pool, backend, code and the target labels", ls)
	}
	if _, ok := s.series("switchover_requests_total_bucket"); ok {
		t.Error("a counter has no _bucket series")
	}
	if ls, _ := s.series("switchover_upstream_duration_seconds_bucket"); !ls["le"] || !ls["backend"] {
		t.Errorf("switchover_upstream_duration_seconds_bucket labels = %v, want backend and le", ls)
	}
	if !slices.Contains(s.knownValues("switchover_requests_total", "code"), "5xx") {
		t.Errorf("code values = %v, want 5xx among them", s.knownValues("switchover_requests_total", "code"))
	}
}
