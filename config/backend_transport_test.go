package config

import (
	"strings"
	"testing"
)

// TestHTTP1TransportValues: http1_transport takes switchover or
// net/http; anything else is an error on its line.
func TestHTTP1TransportValues(t *testing.T) {
	const y = `backends:
  - name: vllm
    type: openai_compatible
    url: http://vllm.internal:8000/v1
    http1_transport: %s
pools:
  - name: p
    members: [{backend: vllm}]
`
	for _, ok := range []string{"switchover", "net/http"} {
		if _, err := Parse("c.yaml", []byte(strings.Replace(y, "%s", ok, 1)), nil); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	_, err := Parse("c.yaml", []byte(strings.Replace(y, "%s", "fasthttp", 1)), nil)
	want := `c.yaml:5: backends[0].http1_transport: must be switchover or net/http, not "fasthttp"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}
