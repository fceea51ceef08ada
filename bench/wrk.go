package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// wrkResult is what a wrk run printed.
type wrkResult struct {
	RPS      float64
	Requests int64
	// Errors counts non-2xx/3xx answers and socket errors.
	Errors   int64
	P50, P99 time.Duration
}

// parseWrk reads wrk's report (run with --latency).
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	seenRPS := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Requests/sec:") && len(f) == 2:
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("bench: wrk Requests/sec %q: %w", f[1], err)
			}
			r.RPS, seenRPS = v, true
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			r.Requests, _ = strconv.ParseInt(f[0], 10, 64)
		case strings.HasPrefix(line, "Non-2xx or 3xx responses:") && len(f) == 5:
			n, _ := strconv.ParseInt(f[4], 10, 64)
			r.Errors += n
		case strings.HasPrefix(line, "Socket errors:"):
			// Socket errors: connect 0, read 0, write 0, timeout 0
			for i := 2; i+1 < len(f); i += 2 {
				n, _ := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
				r.Errors += n
			}
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			d, err := parseWrkDuration(f[1])
			if err != nil {
				return r, err
			}
			if f[0] == "50%" {
				r.P50 = d
			} else {
				r.P99 = d
			}
		}
	}
	if !seenRPS {
		return r, errors.New("bench: no Requests/sec in wrk's output")
	}
	return r, nil
}

// parseWrkDuration reads wrk's durations: "54.00us", "4.13ms", "1.20s",
// "2.00m".
func parseWrkDuration(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"m", time.Minute}, {"s", time.Second}, {"h", time.Hour}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: wrk duration %q: %w", s, err)
			}
			return time.Duration(v * float64(u.unit)), nil
		}
	}
	return 0, fmt.Errorf("bench: wrk duration %q has no unit", s)
}

// wrkScript writes the Lua script that makes wrk send req, and returns
// its path.
func wrkScript(dir string, req request) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "wrk.method = %q\n", "POST")
	fmt.Fprintf(&b, "wrk.body = %q\n", string(req.body))
	for _, h := range req.headers {
		fmt.Fprintf(&b, "wrk.headers[%q] = %q\n", h[0], h[1])
	}
	p := filepath.Join(dir, "post.lua")
	return p, os.WriteFile(p, []byte(b.String()), 0o600)
}

// runWrk runs wrk with threads and conns for d against url.
func runWrk(ctx context.Context, wrk, script, url string, threads, conns int, d time.Duration) (wrkResult, error) {
	secs := max(1, int(d.Round(time.Second)/time.Second))
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, wrk, "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns),
		"-d"+strconv.Itoa(secs)+"s", "--latency", "-s", script, url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("bench: wrk: %w: %s", err, out)
	}
	return parseWrk(string(out))
}
