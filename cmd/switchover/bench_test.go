package main

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/pgtest"
)

// benchChildEnv makes this test binary act as the switchover binary: the
// bench starts the gateway and the reference proxy from os.Executable(),
// which under go test is the test binary.
const benchChildEnv = "SWITCHOVER_TEST_AS_BINARY"

func TestMain(m *testing.M) {
	if os.Getenv(benchChildEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	// The bench's children (TestBenchSmoke's) are this binary and act as
	// switchover. Set here, not with t.Setenv, so that the test, which
	// mostly waits on its children, runs beside the others.
	os.Setenv(benchChildEnv, "1")
	os.Exit(pgtest.Main(m)) // stops the PostgreSQL server the tests share
}

// TestBenchSmoke runs switchover bench end to end with tiny durations and
// without wrk, nginx or strace: the gateway and the reference proxy as
// processes, the built-in generator. It checks the table's shape and that
// every request succeeded, never a speed.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, []string{"bench", "-quick", "-q", "-targets", "direct,switchover,go-proxy",
		"-wrk=", "-nginx=", "-strace=", "-rounds", "2", "-duration", "300ms", "-rate", "100",
		"-streams", "2", "-open-streams", "20", "-open-rate", "200"}, &stdout, &stderr)
	out := stdout.String()
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	for _, want := range []string{"switchover bench, ", "command: switchover bench -quick", "machine: ", "settings: 2 round(s)",
		"wrk not found: max req/s is from the built-in closed-loop generator"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var lines []string
	inTable := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "measure ") {
			inTable = true
		}
		if inTable && l == "" {
			break
		}
		if inTable {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("no table:\n%s", out)
	}
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "measure direct switchover go-proxy switchover/direct go-proxy/direct" {
		t.Errorf("header %q", got)
	}
	// Every measure that needs none of the missing tools, in order.
	wantRows := []string{
		"max req/s, built-in, 64 conns (median of 2)",
		"max req/s, built-in, 32 conns (median of 2)",
		"CPU per request at 100 req/s, us",
		"allocations per request at 100 req/s (/metrics)",
		"p50 added at 100 req/s, ms (direct: its own)",
		"p99 added at 100 req/s, ms (direct: its own)",
		"stream first token added, ms (direct: its own)",
		"streams with each of 5 chunks flushed on its own",
		"RSS with 20 open streams (HTTP/1.1 upstream)",
		"  of which anonymous (RssAnon: heap, stacks)",
		"  before the streams (after the warm-up)",
		"  memory per open stream",
		"RSS with 20 open streams (HTTP/2 upstream)",
		"  memory per open stream",
		`CPU per request at 100 req/s, us: the "Use it" config`,
		"  with 2 members at priority 1",
		"  with 100 pools",
		"  with 100 aliases of the pool",
		"  with 1000 keys",
		"reload of 10 backends, 11 pools at 100 req/s, ms",
		"  requests failed during the reloads",
		"failed requests (all measures)",
	}
	if len(lines)-1 != len(wantRows) {
		t.Errorf("%d rows, want %d:\n%s", len(lines)-1, len(wantRows), strings.Join(lines, "\n"))
	}
	for i, want := range wantRows {
		if i+1 < len(lines) && !strings.HasPrefix(lines[i+1], want+"  ") {
			t.Errorf("row %d is %q, want %q", i+1, lines[i+1], want)
		}
	}
	last := strings.Fields(lines[len(lines)-1])
	if got := strings.Join(last[len(last)-3:], " "); got != "0 0 0" {
		t.Errorf("failed requests: %q, want none for each target\n%s", got, out)
	}
	// Requests went through: every target has a throughput above zero.
	cells := strings.Fields(strings.TrimPrefix(lines[1], wantRows[0]))
	for i, c := range cells[:3] {
		if v, err := strconv.ParseFloat(c, 64); err != nil || v <= 0 {
			t.Errorf("max req/s of target %d: %q", i, c)
		}
	}
}

func TestBenchRefusesBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown target", []string{"-targets", "direct,envoy"}, `unknown target "envoy"`},
		{"unknown measure", []string{"-only", "memory,latency"}, `unknown measure "latency"`},
		{"no rounds", []string{"-rounds", "0"}, "must be positive"},
		{"an argument", []string{"now"}, "bench takes no arguments"},
		{"bad env", []string{"-gateway-env", "GOGC"}, "want KEY=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"bench"}, tt.args...), &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), exitUsage, tt.want)
			}
		})
	}
}
