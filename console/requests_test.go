package console

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// requestLogEnv is a console whose gateway has a store holding 60
// requests (r00 oldest … r59 newest; r07 failed over from uksouth to
// sweden for alice; r08 was unanswered).
func requestLogEnv(t *testing.T) (*env, time.Time) {
	t.Helper()
	e := newEnv(t, false)
	st, err := sqlite.Open(t.Context(), t.TempDir()+"/ledger.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var recs []ledger.Usage
	for i := range 60 {
		u := ledger.Usage{At: t0.Add(time.Duration(i) * time.Second), RequestID: fmt.Sprintf("r%02d", i), KeyID: "key_a", Team: "search",
			Pool: "chat", Backend: "uksouth", Model: "gpt-4o", Status: 200, Tried: 1, DurationMs: 400, FirstByteMs: 200,
			Attempts: []ledger.Attempt{{Backend: "uksouth", Status: 200, Reason: "ok", DurationMs: 200}}}
		switch i {
		case 7:
			u.Backend, u.Failover, u.EndUser, u.Tried = "sweden", true, "alice@example.com", 2
			u.Attempts = []ledger.Attempt{{Backend: "uksouth", Status: 429, Reason: "rate_limited", DurationMs: 300},
				{Backend: "sweden", Status: 200, Reason: "ok", StartMs: 301, DurationMs: 500}}
			u.DurationMs, u.FirstByteMs = 1100, 801
		case 8:
			u.Backend, u.Unanswered, u.Status, u.Tried = "", true, 502, 2
			u.Attempts = []ledger.Attempt{{Backend: "uksouth", Reason: "timeout", DurationMs: 3000}, {Backend: "sweden", Status: 500, Reason: "server_error", StartMs: 3001, DurationMs: 40}}
		}
		recs = append(recs, u)
	}
	if err := st.RecordUsage(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	e.gw.store = st
	return e, t0
}

var requestRow = regexp.MustCompile(`<tr class="req[^"]*" data-id="([^"]+)">`)

func rowIDs(page string) []string {
	var out []string
	for _, m := range requestRow.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestRequestsPage: the request log pages newest first (50 a page, then
// the rest), filters by backend tried, failover and status, shows end
// users to admins only (a viewer's text search does not match them),
// and refuses a bad filter with a 400 saying which.
func TestRequestsPage(t *testing.T) {
	e, _ := requestLogEnv(t)
	admin, _ := e.login(adminKey)
	resp, page := e.do(admin, "GET", "/console/requests", nil)
	ids := rowIDs(page)
	if resp.StatusCode != http.StatusOK || len(ids) != 50 || ids[0] != "r59" || ids[49] != "r10" || !strings.Contains(page, `class="scroll"`) {
		t.Fatalf("first page: %d, %v", resp.StatusCode, ids)
	}
	next := regexp.MustCompile(`href="/console/requests\?([^"]+)" id="next-page"`).FindStringSubmatch(page)
	if next == nil {
		t.Fatal("no link to the next page")
	}
	_, page = e.do(admin, "GET", "/console/requests?"+strings.ReplaceAll(next[1], "&amp;", "&"), nil)
	if ids := rowIDs(page); len(ids) != 10 || ids[0] != "r09" || ids[9] != "r00" || strings.Contains(page, `id="next-page"`) {
		t.Fatalf("second page: %v", ids)
	}
	for query, want := range map[string]string{
		"backend=sweden":             "r08,r07",
		"failover=yes":               "r07",
		"status=5xx":                 "r08",
		"q=alice%40example.com":      "r07",
		"q=r33":                      "r33",
		"backend=uksouth&status=4xx": "",
	} {
		_, page := e.do(admin, "GET", "/console/requests?"+query, nil)
		if got := strings.Join(rowIDs(page), ","); got != want {
			t.Errorf("?%s: %s, want %s", query, got, want)
		}
	}
	if _, page := e.do(admin, "GET", "/console/requests?failover=yes", nil); !strings.Contains(page, "alice@example.com") {
		t.Errorf("the admin does not see the end user")
	}
	viewer, _ := e.login(viewerKey)
	for _, query := range []string{"failover=yes", "q=alice%40example.com", "end_user=alice%40example.com"} {
		_, page := e.do(viewer, "GET", "/console/requests?"+query, nil)
		// The search box shows the viewer's own text; nothing else may.
		page = strings.Replace(page, `value="alice@example.com"`, "", 1)
		if strings.Contains(page, "alice@example.com") || (query == "q=alice%40example.com" && len(rowIDs(page)) != 0) {
			t.Errorf("a viewer's ?%s shows the end user or finds by it:\n%s", query, page)
		}
	}
	for query, field := range map[string]string{"from=yesterday": "from", "status=6xx": "status", "failover=maybe": "failover", "before=12&before_id=": "position"} {
		resp, page := e.do(admin, "GET", "/console/requests?"+query, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, `id="requests-error"`) || !strings.Contains(page, field) {
			t.Errorf("?%s: %d, want 400 naming %s", query, resp.StatusCode, field)
		}
	}
	// A visitor is sent to the login.
	if resp, _ := e.do(e.client(), "GET", "/console/requests/r07", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a visitor's request page: %d, want the login's redirect", resp.StatusCode)
	}
}

// TestRequestPageTimeline: a request's page draws its attempts as an SVG
// timeline, bars in order and coloured by outcome; the viewer sees no end
// user; an unknown id is a 404 page.
func TestRequestPageTimeline(t *testing.T) {
	e, _ := requestLogEnv(t)
	admin, _ := e.login(adminKey)
	resp, page := e.do(admin, "GET", "/console/requests/r07", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<svg class="timeline" id="timeline"`) || !strings.Contains(page, "alice@example.com") {
		t.Fatalf("r07: %d\n%s", resp.StatusCode, page)
	}
	bars := regexp.MustCompile(`<g class="attempt (\w+)"><title>attempt \d: ([^,]+),`).FindAllStringSubmatch(page, -1)
	if len(bars) != 2 || bars[0][1] != "failed" || !strings.HasPrefix(bars[0][2], "uksouth · 429 rate_limited") || bars[1][1] != "ok" || !strings.HasPrefix(bars[1][2], "sweden · 200 ok") {
		t.Fatalf("bars %q", bars)
	}
	// The second bar starts after the first ends: x of 301 ms of 1100.
	xs := regexp.MustCompile(`<rect x="([\d.]+)"`).FindAllStringSubmatch(page, -1)
	if len(xs) != 2 || xs[0][1] != "8" || !strings.HasPrefix(xs[1][1], "200.") {
		t.Fatalf("bars start at %q, want 8 and 200.x (301 of 1100 ms over 704 units)", xs)
	}
	_, page = e.do(admin, "GET", "/console/requests/r08", nil)
	if !strings.Contains(page, "no backend (every attempt failed)") || !strings.Contains(page, `class="attempt abandoned"`) && !strings.Contains(page, `class="attempt failed"`) {
		t.Fatalf("the unanswered r08:\n%s", page)
	}
	viewer, _ := e.login(viewerKey)
	if _, page := e.do(viewer, "GET", "/console/requests/r07", nil); strings.Contains(page, "alice@example.com") || !strings.Contains(page, "timeline") {
		t.Fatalf("the viewer's r07 shows the end user or no timeline")
	}
	resp, page = e.do(admin, "GET", "/console/requests/"+url.PathEscape("<script>x"), nil)
	if resp.StatusCode != http.StatusNotFound || strings.Contains(page, "<script>x") {
		t.Fatalf("an unknown id: %d, echoed raw: %v", resp.StatusCode, strings.Contains(page, "<script>x"))
	}
}

// TestEventLinksToRequests: a breaker's opening on the events page links
// to the request log of its backend around that time.
func TestEventLinksToRequests(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(adminKey)
	_, page := e.do(c, "GET", "/console/events", nil)
	m := regexp.MustCompile(`<a href="/console/requests\?([^"]+)">requests that tried uksouth around then</a>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no link from the breaker's opening:\n%s", page)
	}
	v, err := url.ParseQuery(strings.ReplaceAll(m[1], "&amp;", "&"))
	if err != nil || v.Get("backend") != "uksouth" || v.Get("from") == "" || v.Get("to") == "" {
		t.Fatalf("link query %q: %v", m[1], err)
	}
	if strings.Count(page, "around then") != 1 {
		t.Errorf("%d links, want one (the breaker's opening only)", strings.Count(page, "around then"))
	}
}

// TestRequestPageBodies: an admin sees a request's kept bodies, their
// markup escaped (an XSS attempt in a prompt or an answer is text), the
// truncation said; a viewer sees none of them, nor that there are some;
// a request without bodies says why.
func TestRequestPageBodies(t *testing.T) {
	e, t0 := requestLogEnv(t)
	xss := `<script>alert(document.cookie)</script><img src=x onerror=alert(1)>`
	if err := e.gw.store.RecordUsage(t.Context(), []ledger.Usage{{At: t0.Add(time.Hour), RequestID: "rb", KeyID: "key_a", Pool: "chat",
		Backend: "uksouth", Status: 200, Bodies: &ledger.Bodies{Request: []byte(`{"content":"` + xss + ` sk-proj-abcdefghijklmnopqrstuvwxyz"}`),
			Response: []byte(`{"answer":"</pre>` + xss + `"}`), RequestSize: 90, ResponseSize: 4000, ResponseTruncated: true}}}); err != nil {
		t.Fatal(err)
	}
	admin, _ := e.login(adminKey)
	resp, page := e.do(admin, "GET", "/console/requests/rb", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<pre class="body" id="request-body">`) ||
		!strings.Contains(page, "&lt;script&gt;alert(document.cookie)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; "+ledger.Redacted) ||
		!strings.Contains(page, "&lt;/pre&gt;&lt;script&gt;") || !strings.Contains(page, "4000 bytes; <strong>truncated</strong>") {
		t.Fatalf("rb's bodies: %d\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") || strings.Contains(page, "sk-proj-") {
		t.Errorf("a body's markup or secret reached the page raw:\n%s", page)
	}
	viewer, _ := e.login(viewerKey)
	if _, page := e.do(viewer, "GET", "/console/requests/rb", nil); strings.Contains(page, "alert") || strings.Contains(page, "Bodies") ||
		!strings.Contains(page, "timeline") && !strings.Contains(page, "Answered by") {
		t.Errorf("the viewer's rb shows its bodies:\n%s", page)
	}
	if _, page := e.do(admin, "GET", "/console/requests/r07", nil); !strings.Contains(page, `id="no-bodies">No bodies kept`) {
		t.Errorf("r07, without bodies, does not say so:\n%s", page)
	}
}
