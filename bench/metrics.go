package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// mallocsMetric is the Go runtime's count of heap allocations, as the
// gateway's /metrics exposes it.
const mallocsMetric = "go_memstats_mallocs_total"

// scrapeMetric reads one unlabelled sample from a Prometheus text
// exposition at url.
func scrapeMetric(ctx context.Context, url, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("bench: %s answered %d", url, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := metricValue(sc.Text(), name); ok {
			return v, nil
		}
	}
	return 0, fmt.Errorf("bench: %s has no %s", url, name)
}

// metricValue parses line as "name value" (no labels).
func metricValue(line, name string) (float64, bool) {
	rest, ok := strings.CutPrefix(line, name+" ")
	if !ok {
		return 0, false
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// mallocCounter reads the gateway's allocation count, less what reading
// it costs: a scrape allocates too, and the "before" scrape's share falls
// in the window measured.
type mallocCounter struct {
	url       string
	perScrape float64
}

// newMallocCounter measures what one scrape allocates (two scrapes back
// to back, with nothing else running).
func newMallocCounter(ctx context.Context, url string) (*mallocCounter, error) {
	a, err := scrapeMetric(ctx, url, mallocsMetric)
	if err != nil {
		return nil, err
	}
	b, err := scrapeMetric(ctx, url, mallocsMetric)
	if err != nil {
		return nil, err
	}
	return &mallocCounter{url: url, perScrape: b - a}, nil
}

func (m *mallocCounter) read(ctx context.Context) (float64, error) {
	return scrapeMetric(ctx, m.url, mallocsMetric)
}
