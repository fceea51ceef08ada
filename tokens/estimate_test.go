package tokens

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/route"
)

// textSample is text of one kind, from files of this repository or
// testdata.
type textSample struct {
	kind  string
	files []string
	tol   float64 // the largest relative error allowed, per file
	cl100 float64 // for cl100k_base, when not tol
}

var textSamples = []textSample{
	{"prose", []string{"../docs/operations.md", "../docs/providers.md", "../docs/sim.md", "../README.md"}, 0.10, 0},
	{"code", []string{"../route/pool.go", "../route/quota.go", "../tenant/limiter.go", "../translate/stream_openai.go"}, 0.10, 0},
	{"json", []string{"../translate/testdata/req_openai_to_gemini_tools.in.json", "../deploy/helm/switchover/values.schema.json", "../deploy/grafana/switchover.json"}, 0.10, 0},
	// cl100k_base spends more tokens on other languages than English.
	{"latin", []string{"testdata/prose_de.txt", "testdata/prose_fr.txt"}, 0.15, 0.25},
	{"other scripts", []string{"testdata/prose_ru.txt", "testdata/prose_zh.txt", "testdata/prose_ja.txt"}, 0.25, 0},
}

// TestEstimateTextIsClose: route.EstimateText, the estimate admission and
// the quota router read, is within each kind's tolerance of o200k_base's
// and cl100k_base's own counts: 10% for English prose, Go and JSON, 15%
// for French and German (25% with cl100k_base), 25% for Cyrillic,
// Chinese and Japanese.
func TestEstimateTextIsClose(t *testing.T) {
	var c Counter
	for _, s := range textSamples {
		for _, f := range s.files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			for _, e := range []Encoding{O200k, Cl100k} {
				want := c.count(e, text)
				got := route.EstimateText(e, text)
				d := float64(got-want) / float64(want)
				t.Logf("%-13s %-28s %-11s tokenizer %6d estimate %6d (%+.1f%%, %.2f bytes a token)", s.kind, filepath.Base(f), e, want, got, 100*d, float64(len(b))/float64(want))
				tol := s.tol
				if e == Cl100k && s.cl100 > 0 {
					tol = s.cl100
				}
				if math.Abs(d) > tol {
					t.Errorf("%s (%s): estimate %d, tokenizer %d: %+.1f%%, more than %.0f%% off", f, e, got, want, 100*d, 100*tol)
				}
			}
		}
	}
}

// TestRequestEstimateIsClose: the prompt estimate of a text-heavy request
// (route.Request.PromptTokens, which admission and the quota router read)
// is within 15% of the tokenizer's count of the same request
// (Counter.PromptTokens, which prices answers that report no usage).
func TestRequestEstimateIsClose(t *testing.T) {
	var c Counter
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile("../route/pool.go")
	if err != nil {
		t.Fatal(err)
	}
	q := func(b []byte) string { s, _ := json.Marshal(string(b)); return string(s) }
	tests := []struct {
		model string
		op    route.Operation
		body  string
	}{
		{"gpt-4o", route.ChatCompletions, `{"model":"gpt-4o","messages":[{"role":"system","content":` + q(doc) + `},` +
			`{"role":"user","content":[{"type":"text","text":` + q(code) + `}]}],"max_tokens":100}`},
		{"gpt-4", route.ChatCompletions, `{"model":"gpt-4","messages":[{"role":"user","content":` + q(doc[:20000]) + `}]}`},
		{"claude-sonnet-4-5", route.Messages, `{"model":"claude-sonnet-4-5","max_tokens":100,"system":` + q(doc) + `,` +
			`"messages":[{"role":"user","content":` + q(code) + `}]}`},
	}
	for _, tt := range tests {
		r, err := route.NewRequest(tt.op, []byte(tt.body), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := r.PromptTokens()
		want := int64(c.PromptTokens(tt.model, r.Format, r.Body))
		d := float64(got-want) / float64(want)
		t.Logf("%s: estimate %d, tokenizer %d (%+.1f%%)", tt.model, got, want, 100*d)
		if math.Abs(d) > 0.15 {
			t.Errorf("%s: estimate %d, tokenizer %d: %+.1f%%", tt.model, got, want, 100*d)
		}
	}
}

// TestEstimateTextOfJSONStrings: text in a request's JSON string, escapes
// and all, is estimated as the text itself.
func TestEstimateTextOfJSONStrings(t *testing.T) {
	b, err := os.ReadFile("../route/quota.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b) + "été 中文 😀 \t\"quoted\"\\"
	q, _ := json.Marshal(text)
	r, err := route.NewRequest(route.ChatCompletions, []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":`+string(q)+`}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := int64(route.EstimateText(O200k, text))
	if got := r.PromptTokens() - route.ItemTokens; got < plain-1 || got > plain+1 {
		t.Errorf("as a JSON string: %d tokens, as text %d", got, plain)
	}
}

// BenchmarkRequestEstimate: the prompt estimate of a request with 4 KB of
// English text and a 100 KB image, as admission makes it; compare
// BenchmarkCount, the tokenizer over the text alone.
func BenchmarkRequestEstimate(b *testing.B) {
	text := strings.Repeat("We know what we are, but know not what we may be. ", 80)
	body := []byte(`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"` + text + `"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + strings.Repeat("iVBORw0KGgo", 100<<10/11) + `"}}]}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := route.Request{Op: route.ChatCompletions, Body: body, Model: "gpt-4o"}
		r.PromptTokens()
	}
}
