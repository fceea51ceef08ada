package bench

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/switchover-gw/switchover/load"
)

// caller sends the bench's request and reads the whole answer; an answer
// is OK when it is a 200. It is the load.Caller of the built-in
// generators, lighter than load.HTTPCaller (no JSON decoding), so that
// the bench process takes as little CPU from the targets as it can.
type caller struct {
	client *http.Client
	req    request
}

var _ load.Caller = (*caller)(nil)

// Call implements load.Caller.
func (c *caller) Call(ctx context.Context, start time.Duration) load.Sample {
	s := load.Sample{Start: start}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := c.req.httpRequest(ctx)
	if err != nil {
		s.Failure = "request"
		return s
	}
	resp, err := c.client.Do(req)
	if err != nil {
		s.Failure = "connection"
		s.Latency = time.Since(began)
		return s
	}
	s.FirstByte = time.Since(began)
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s.Latency = time.Since(began)
	s.Status = resp.StatusCode
	switch {
	case err != nil:
		s.Failure = "body"
	case resp.StatusCode != http.StatusOK:
		s.Failure = strconv.Itoa(resp.StatusCode)
	default:
		s.OK = true
	}
	return s
}

// fixedRate sends rate requests a second for d (the open model: arrivals
// do not wait for answers) and returns the summary.
func fixedRate(ctx context.Context, c *caller, rate float64, d time.Duration) (load.Summary, error) {
	res, err := load.Run(ctx, load.Options{Rate: rate, Duration: d, MaxInFlight: 4096}, c)
	if err != nil {
		return load.Summary{}, err
	}
	return res.Summary, nil
}

// closedLoop runs conns callers back to back for d: the built-in stand-in
// for wrk when wrk is not installed.
func closedLoop(ctx context.Context, c *caller, conns int, d time.Duration) (load.Summary, error) {
	res, err := load.Run(ctx, load.Options{Concurrency: conns, Duration: d}, c)
	if err != nil {
		return load.Summary{}, err
	}
	return res.Summary, nil
}
