package gameday

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/load"
)

// TestWindowsCountCallsAndWaitsPerFaultWindow checks the figures the
// brownout and flapping targets read: calls per request within each
// window of the outage region (from the regions' counters at its edges)
// and the clients' wait on it.
func TestWindowsCountCallsAndWaitsPerFaultWindow(t *testing.T) {
	s := time.Second
	var samples []load.Sample
	// Fault-free requests: 400 ms each, one a second from 0 to 9 s and
	// from 40 to 49 s.
	for i := range 10 {
		samples = append(samples, load.Sample{Start: time.Duration(i) * s, Latency: 400 * time.Millisecond, OK: true})
		samples = append(samples, load.Sample{Start: time.Duration(40+i) * s, Latency: 400 * time.Millisecond, OK: true})
	}
	// First window (10-20 s): 10 requests, three of which wait 5 s.
	for i := range 10 {
		lat := 400 * time.Millisecond
		if i < 3 {
			lat = 5 * time.Second
		}
		samples = append(samples, load.Sample{Start: time.Duration(10+i) * s, Latency: lat, OK: true})
	}
	// Second window (30-35 s): 5 requests, none waits.
	for i := range 5 {
		samples = append(samples, load.Sample{Start: time.Duration(30+i) * s, Latency: 400 * time.Millisecond, OK: true})
	}
	rr := RunResult{Samples: samples, Faults: []FaultWindow{
		{Region: "weu", Mode: "blackhole", From: 10 * s, To: 20 * s},
		{Region: "sec", Mode: "down", From: 22 * s, To: 23 * s},
		{Region: "weu", Mode: "blackhole", From: 30 * s, To: 35 * s},
	}}
	offset := 500 * time.Millisecond // the load started half a second after the sim
	m := &callMeter{at: map[time.Duration]int64{10*s + offset: 12, 20*s + offset: 25}}
	got := windows("weu", rr, m, offset)
	if len(got) != 2 {
		t.Fatalf("windows = %+v, want 2 (weu's only)", got)
	}
	w := got[0]
	if w.Requests != 10 || w.Calls != 13 || w.CallsPerRequest != 1.3 {
		t.Errorf("first window: %d requests, %d calls, %.2f/req; want 10, 13, 1.30", w.Requests, w.Calls, w.CallsPerRequest)
	}
	if w.Waited != 3 || w.Wait != 3*(5*s-400*time.Millisecond) {
		t.Errorf("first window: %d waited %s; want 3 waited 13.8s", w.Waited, w.Wait)
	}
	if w := got[1]; w.Requests != 5 || w.Calls != -1 || w.Waited != 0 || w.Wait != 0 {
		t.Errorf("second window (edges not read): %+v; want 5 requests, calls -1, no wait", w)
	}
	var text bytes.Buffer
	writeWindows(&text, ScenarioResult{Runs: []RunResult{{Setup: "gw", Outage: &OutageResult{Primary: "weu"}, Windows: got}}})
	for _, want := range []string{"1. 10.0 s-20.0 s blackhole: 10 requests, 1.30 calls/req (13 calls), 3 waited 13.8 s", "calls not measured"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}
