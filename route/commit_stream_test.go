package route_test

// Regression tests for issue 22, section 5: a stream that has sent only
// events that carry no content (Azure's prompt_filter_results, a
// role-only delta) is not started, and fails over when it dies or stalls;
// a stream that stalls after its content ends by the stall rule, long
// before the idle timeout; a healthy slow stream is not cut.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/route"
)

const (
	filterEvent = `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`
	roleEvent   = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	stopEvent   = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
)

func wordEvent(w string) string {
	return `{"choices":[{"index":0,"delta":{"content":"` + w + `"},"finish_reason":null}]}`
}

// azureStream answers as an Azure stream does: its filter results, the
// role chunk, name's words, the finish and [DONE].
func azureStream(name string) step {
	return chunks(filterEvent, roleEvent, wordEvent(name+"-1 "), wordEvent(name+"-2"), stopEvent, "[DONE]")
}

// thenCut sends data as events, then cuts the connection without ending
// the response.
func thenCut(data ...string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		chunks(data...)(w, r)
		panic(http.ErrAbortHandler)
	}
}

// thenHang sends data as events, then nothing until the client goes.
func thenHang(data ...string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		chunks(data...)(w, r)
		<-r.Context().Done()
	}
}

// bodyRead is a backend transport that tells, once for each answer, when
// the engine, having read the first bytes of its body, waits for more.
type bodyRead struct {
	rt      http.RoundTripper
	waiting chan struct{}
}

func newBodyRead(t *testing.T) *bodyRead {
	tr := route.NewTransport(route.TransportSettings{})
	t.Cleanup(tr.CloseIdleConnections)
	return &bodyRead{rt: tr, waiting: make(chan struct{}, 64)}
}

func (b *bodyRead) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(r)
	if err == nil {
		resp.Body = &signalBody{ReadCloser: resp.Body, b: b}
	}
	return resp, err
}

type signalBody struct {
	io.ReadCloser
	b          *bodyRead
	read, told bool // a read has returned bytes; the wait after has been told
}

func (s *signalBody) Read(p []byte) (int, error) {
	if s.read && !s.told {
		s.told = true
		s.b.waiting <- struct{}{}
	}
	n, err := s.ReadCloser.Read(p)
	s.read = s.read || n > 0
	return n, err
}

// checkServedBySec checks a streamed answer that weu failed before its
// content: sec's whole stream, with one filter event (weu's was dropped),
// and weu's attempt retryable for reason.
func checkServedBySec(t *testing.T, res result, reason route.Reason) {
	t.Helper()
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.resp.StatusCode != 200 || res.resp.Header.Get(route.HeaderBackend) != "sec" {
		t.Fatalf("got %d from %q", res.resp.StatusCode, res.resp.Header.Get(route.HeaderBackend))
	}
	evs, err := readEvents(strings.NewReader(res.body))
	if err != nil || len(evs) != 6 || evs[0] != filterEvent || !strings.Contains(evs[2], "sec-1") || evs[5] != "[DONE]" {
		t.Fatalf("client got %q (%v), want sec's stream", evs, err)
	}
	if n := strings.Count(res.body, "prompt_filter_results"); n != 1 || strings.Contains(res.body, "weu") {
		t.Fatalf("client got %d filter events or weu's bytes: %q", n, res.body)
	}
	if a := res.rep.Attempts; len(a) != 2 || a[0].Backend != "weu" || !a[0].Retryable || a[0].Reason != reason {
		t.Fatalf("attempts %+v, want weu failed (%s) before sec", a, reason)
	}
}

// TestFilterResultsAloneDoNotCommitAStream: a stream whose only event is
// Azure's prompt_filter_results, then silence, is failed over by the
// first-byte timeout, where it used to count as started and hang until
// the idle timeout (two minutes); the client gets sec's stream, once.
func TestFilterResultsAloneDoNotCommitAStream(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	// Under the slow threshold before any history (5 s): the first-byte
	// timeout alone decides, no health check.
	const firstByte = 3 * time.Second
	seen := newBodyRead(t)
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{thenHang(filterEvent)}, tune: func(b *route.Backend) {
			b.StreamFirstByteTimeout, b.IdleTimeout, b.Transport = firstByte, 2*time.Minute, seen
		}},
		memberSpec{name: "sec", priority: 2, script: []step{azureStream("sec")}},
	)
	call := e.goDo(ctx, streamBody)
	select {
	case <-seen.waiting:
	case <-ctx.Done():
		t.Fatal("the engine never waited past weu's filter results")
	}
	clk.Advance(firstByte)
	checkServedBySec(t, await(t, ctx, call), route.ReasonFirstByteTimeout)
	if s := e.backends["weu"].Breaker.Snapshot(); s.Failures != 1 {
		t.Fatalf("weu's breaker %+v, want the silent stream counted", s)
	}
}

// TestContentlessStreamCutShortFailsOver: a stream cut after events that
// carry no content (the filter results, a role-only delta) fails over at
// once; the client never sees the first backend's bytes.
func TestContentlessStreamCutShortFailsOver(t *testing.T) {
	for _, tc := range []struct {
		name string
		weu  step
	}{
		{"filter results then reset", thenCut(filterEvent)},
		{"role-only delta then reset", thenCut(filterEvent, roleEvent)},
		{"role-only delta then a clean end", chunks(filterEvent, roleEvent)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{tc.weu}},
				memberSpec{name: "sec", priority: 2, script: []step{azureStream("sec")}},
			)
			ctx := safety(t)
			checkServedBySec(t, await(t, ctx, e.goDo(ctx, streamBody)), route.ReasonConnection)
		})
	}
}

// TestStreamStalledAfterContentEndsByTheStallRule: a stream that falls
// silent after its first words ends with a timeout BodyError (the proxy
// turns it into the error event) once the stall rule's bound has passed,
// not after the idle timeout, and counts against the backend.
func TestStreamStalledAfterContentEndsByTheStallRule(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, settings: breaker.Settings{Failures: 5},
			script: []step{thenHang(filterEvent, roleEvent, wordEvent("one "), wordEvent("two"))},
			tune:   func(b *route.Backend) { b.IdleTimeout = 2 * time.Minute }},
	)
	r, _ := route.NewRequest(route.ChatCompletions, []byte(streamBody), nil)
	resp, _, err := e.pool.Do(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines, readErr := make(chan string, 16), make(chan error, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		readErr <- sc.Err()
	}()
	var got []string
	for !strings.Contains(strings.Join(got, ""), "two") {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended after %q", got)
			}
			got = append(got, l)
		case <-ctx.Done():
			t.Fatalf("no second word; got %q", got)
		}
	}
	// The words came at once (the fake clock stands still): the gaps are
	// nil, the bound is the floor, armed once the body waits for more.
	if err := clk.BlockUntilTimer(ctx, route.StallFloor); err != nil {
		t.Fatalf("no read waits on the stall rule's floor (%v): %v", route.StallFloor, err)
	}
	clk.Advance(route.StallFloor)
	for l := range lines {
		got = append(got, l)
	}
	var be *route.BodyError
	if err := <-readErr; !errors.As(err, &be) || be.Reason != route.ReasonTimeout || be.Backend != "weu" || !strings.Contains(be.Error(), "stalled") {
		t.Fatalf("err = %v, want a timeout BodyError for a stall", err)
	}
	if evs, _ := readEvents(strings.NewReader(strings.Join(got, "\n"))); len(evs) != 4 {
		t.Fatalf("client got %q before the stall", evs)
	}
	if s := e.backends["weu"].Breaker.Snapshot(); s.Failures != 1 {
		t.Fatalf("weu's breaker %+v, want the stall counted", s)
	}
}

// TestHealthySlowStreamIsNotCut: a stream whose words come slowly, one
// gap just under the floor and then gaps twice the floor, is passed on
// whole: each gap raises the bound (StallFactor times the longest gap),
// and no read is ended. The upstream moves the fake clock by each gap
// only once the engine's read waits on the bound the rule gives.
func TestHealthySlowStreamIsNotCut(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	const idle = 5 * time.Minute
	gaps := []time.Duration{route.StallFloor - time.Second, 2 * route.StallFloor, 2 * route.StallFloor, route.StallFloor / 2}
	slow := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		send := func(data string) {
			fmt.Fprintf(w, "data: %s\n\n", data)
			w.(http.Flusher).Flush()
		}
		send(filterEvent)
		send(roleEvent)
		send(wordEvent("w0"))
		bound, longest := route.StallFloor, time.Duration(0)
		for i, gap := range gaps {
			if err := clk.BlockUntilTimer(ctx, bound); err != nil {
				panic(fmt.Sprintf("gap %d: no read waits on %v: %v", i, bound, err))
			}
			clk.Advance(gap)
			send(wordEvent(fmt.Sprintf(" w%d", i+1)))
			longest = max(longest, gap)
			bound = min(max(route.StallFactor*longest, route.StallFloor), idle)
		}
		send(stopEvent)
		send("[DONE]")
	}
	e := newEnvClock(t, clk, memberSpec{name: "weu", priority: 1, script: []step{slow},
		tune: func(b *route.Backend) { b.IdleTimeout = idle }})
	res := await(t, ctx, e.goDo(ctx, streamBody))
	if res.err != nil {
		t.Fatalf("slow stream ended with %v after %q", res.err, res.body)
	}
	evs, _ := readEvents(strings.NewReader(res.body))
	if len(evs) != 3+len(gaps)+2 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("client got %q", evs)
	}
	if s := e.backends["weu"].Breaker.Snapshot(); s.Failures != 0 {
		t.Fatalf("weu's breaker %+v", s)
	}
}

// TestSlowStartBeforeContentIsTheFirstByteTimeouts: a stream that sends its
// filter results at once and its first words only after a long wait (a
// reasoning model) is not cut by the stall rule: before content only the
// first-byte timeout applies (and the slow call's health check, which
// finds the backend answering).
func TestSlowStartBeforeContentIsTheFirstByteTimeouts(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	const firstByte = 5 * time.Minute
	think := 3 * route.StallFloor
	seen := newBodyRead(t)
	thought := make(chan struct{})
	reasoning := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "data: %s\n\ndata: %s\n\n", filterEvent, roleEvent)
		w.(http.Flusher).Flush()
		select {
		case <-thought:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "data: %s\n\ndata: %s\n\ndata: [DONE]\n\n", wordEvent("answer"), stopEvent)
	}
	checked := make(chan struct{}, 1)
	check := func(w http.ResponseWriter, r *http.Request) {
		checked <- struct{}{}
		sse("weu", 1, -1)(w, r) // a stream called for it: it is checked with one
	}
	e := newEnvClock(t, clk, memberSpec{name: "weu", priority: 1, script: []step{reasoning, check},
		tune: func(b *route.Backend) {
			b.StreamFirstByteTimeout, b.IdleTimeout, b.Transport = firstByte, 2*time.Minute, seen
		}})
	call := e.goDo(ctx, streamBody)
	// The engine has the events and waits for more, its first-byte timer
	// still armed.
	select {
	case <-seen.waiting:
	case <-ctx.Done():
		t.Fatal("the engine never waited past the role chunk")
	}
	if err := clk.BlockUntilTimer(ctx, firstByte); err != nil {
		t.Fatal(err)
	}
	// The model thinks: past the slow threshold the backend is checked
	// (its health check, weu's second step, answers; the test waits for
	// the check's timer to be stopped before the clock moves on), then
	// past the stall rule's bounds, to the content.
	slow := e.backends["weu"].SlowAfter(true)
	clk.Advance(slow)
	select {
	case <-checked: // the check's timer is armed before its call goes
	case <-ctx.Done():
		t.Fatal("no health check past the slow threshold")
	}
	// Once it has its answer, only the first-byte timer is left.
	poll.Until(t, 10*time.Second, func() bool { return clk.Pending() == 1 }, func() string { return "the health check to end" })
	clk.Advance(think - slow)
	close(thought)
	res := await(t, ctx, call)
	if res.err != nil || res.resp.StatusCode != 200 {
		t.Fatalf("reasoning stream: %v, %q", res.err, res.body)
	}
	if evs, _ := readEvents(strings.NewReader(res.body)); len(evs) != 5 || !strings.Contains(evs[2], "answer") {
		t.Fatalf("client got %q", evs)
	}
	if a := res.rep.Attempts; len(a) != 1 || a[0].Duration != think {
		t.Fatalf("attempts %+v, want one whose time to first byte is the wait for content (%v)", a, think)
	}
}

// TestStreamChecksFollowFirstEventsThenContent: a backend whose streams
// send their first event (Azure's filter results) at once and their
// content seconds later is checked at the first events' threshold while a
// call has had no event at all (a region gone dark is noticed as soon as
// before), and at the content's once the first event is in (a model that
// thinks is not checked on every call). A stream that has sent only its
// filter results when a check finds the backend dead fails over at once:
// before its content, the health check's verdict governs it.
func TestStreamChecksFollowFirstEventsThenContent(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	const think = 3 * time.Second
	seen := newBodyRead(t)
	checked, release := make(chan struct{}, 1), make(chan struct{})
	calls := 0
	weu := func(w http.ResponseWriter, r *http.Request) {
		if isHealthCheck(r) {
			checked <- struct{}{}
			<-r.Context().Done()
			return
		}
		calls++
		if calls > 8 {
			<-release // until the test has seen the call wait for its first event
			thenHang(filterEvent)(w, r)
			return
		}
		// Learning: the filter results at once, the words after think.
		chunks(filterEvent)(w, r)
		select {
		case <-seen.waiting:
		case <-ctx.Done():
			panic("the engine never waited past the filter results")
		}
		clk.Advance(think)
		fmt.Fprintf(w, "data: %s\n\ndata: %s\n\ndata: [DONE]\n\n", wordEvent("weu"), stopEvent)
	}
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{weu}, settings: breaker.Settings{Failures: 5, Trip: time.Minute},
			tune: func(b *route.Backend) { b.Transport = seen }},
		memberSpec{name: "sec", priority: 2, script: []step{azureStream("sec")}},
	)
	for range 8 {
		if _, _, body := e.do(t, streamBody); !strings.Contains(body, "weu") {
			t.Fatalf("learning call: %q", body)
		}
	}
	// Learned: first events at once (threshold: the 2 s floor), content
	// after 3 s (threshold: three times that).
	stuck := e.goDo(ctx, streamBody)
	if err := clk.BlockUntilTimer(ctx, 2*time.Second); err != nil {
		t.Fatalf("no check armed at the first events' threshold: %v", err)
	}
	close(release)
	select {
	case <-seen.waiting:
	case <-ctx.Done():
		t.Fatal("the engine never waited past the filter results")
	}
	if err := clk.BlockUntilTimer(ctx, 3*think); err != nil {
		t.Fatalf("no check armed at the content's threshold: %v", err)
	}
	clk.Advance(3 * think)
	select {
	case <-checked:
	case <-ctx.Done():
		t.Fatal("no health check once the stream waited past its content's threshold")
	}
	// The check gets no answer: its own timeout (armed before it was
	// sent, at most 10 s) ends it.
	clk.Advance(10 * time.Second)
	checkServedBySec(t, await(t, ctx, stuck), route.ReasonUnresponsive)
	if s := e.backends["weu"].Breaker.Snapshot(); s.State != breaker.Open {
		t.Fatalf("weu's breaker %v after a failed check", s.State)
	}
}
