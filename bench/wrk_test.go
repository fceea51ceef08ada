package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseWrk(t *testing.T) {
	tests := []struct {
		file string
		want wrkResult
	}{
		// wrk 4.1 against a proxy whose upstream was down: every answer 502.
		{"testdata/wrk-non2xx.txt", wrkResult{RPS: 6567.18, Requests: 6743, Errors: 6743, P50: 411 * time.Microsecond, P99: 14450 * time.Microsecond}},
		// wrk 4.1's report with socket errors (read 2, timeout 3).
		{"testdata/wrk-ok.txt", wrkResult{RPS: 14435.27, Requests: 72241, Errors: 5, P50: 3950 * time.Microsecond, P99: 12480 * time.Microsecond}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseWrk(string(b))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseWrk = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseWrkWithoutRequestsPerSecond(t *testing.T) {
	if _, err := parseWrk("unable to connect to 127.0.0.1:1 Connection refused\n"); err == nil {
		t.Error("parseWrk of an error message: no error")
	}
}

func TestParseWrkDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "54.00us", want: 54 * time.Microsecond},
		{in: "4.13ms", want: 4130 * time.Microsecond},
		{in: "1.20s", want: 1200 * time.Millisecond},
		{in: "2.00m", want: 2 * time.Minute},
		{in: "12", bad: true},
		{in: "x.yms", bad: true},
	}
	for _, tt := range tests {
		got, err := parseWrkDuration(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("parseWrkDuration(%q) = %v, %v; want %v (error: %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestWrkScriptSendsTheRequest(t *testing.T) {
	p, err := wrkScript(t.TempDir(), chatRequest("", false))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`wrk.method = "POST"`, `"model\":\"chat-prod\"`, `wrk.headers["Authorization"] = "Bearer ` + benchKey + `"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("script lacks %s:\n%s", want, b)
		}
	}
}
