package route

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

const testSecret = "sk-Proj-SECRET-0123abcXYZ"

// TestRedactSecretsDisguisedForms: a backend's key quoted in another
// case, JSON-escaped, encoded or split by white space is found and its
// whole span replaced; text without it is returned as it is.
func TestRedactSecretsDisguisedForms(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"as sent", "key " + testSecret + " refused", "key [redacted] refused"},
		{"lower case", "key " + strings.ToLower(testSecret) + " refused", "key [redacted] refused"},
		{"upper case", "key=" + strings.ToUpper(testSecret), "key=[redacted]"},
		{"split by a space", `"sk-Proj-SECRE T-0123abcXYZ"`, `"[redacted]"`},
		{"split by a line break", "sk-Proj-\nSECRET-0123abcXYZ.", "[redacted]."},
		{"split by CRLF and tabs", "sk-Proj-SEC\r\n\t\tRET-0123abcXYZ", "[redacted]"},
		{"split by escaped line breaks", `"sk-Proj-SECRET\n-0123abc\r\nXYZ"`, `"[redacted]"`},
		{"dash escaped", `"sk\u002dProj\u002dSECRET\u002d0123abcXYZ"`, `"[redacted]"`},
		{"every character escaped", `"` + escapeAll(testSecret) + `" x`, `"[redacted]" x`},
		{"escaped first character", `"\u0073k-Proj-SECRET-0123abcXYZ"`, `"[redacted]"`},
		{"escaped space inside", `"sk-Proj-\u0020SECRET-0123abcXYZ"`, `"[redacted]"`},
		{"escaped capitals", `\u0053K-PROJ-SECRET-0123ABCXYZ`, `[redacted]`},
		{"url-encoded", "key=sk%2DProj%2DSECRET%2D0123abcXYZ&x=1", "key=[redacted]&x=1"},
		{"html reference", "sk&#45;Proj&#x2d;SECRET-0123abcXYZ", "[redacted]"},
		{"zero-width space inside", "sk-Proj-\u200bSECRET-0123abcXYZ", "[redacted]"},
		{"no-break space inside", "sk-Proj-\u00a0SECRET-0123abcXYZ", "[redacted]"},
		{"twice", testSecret + "," + testSecret, "[redacted],[redacted]"},
		{"a prefix alone is kept", "sk-Proj-SECRET-0123", "sk-Proj-SECRET-0123"},
		{"other text is kept", `{"error":{"message":"bad"}}`, `{"error":{"message":"bad"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := redactSecrets(tc.in, []string{testSecret}); got != tc.want {
				t.Fatalf("redactSecrets(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func escapeAll(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		b.WriteString(`\u00`)
		b.WriteByte("0123456789abcdef"[c>>4])
		b.WriteByte("0123456789abcdef"[c&15])
	}
	return b.String()
}

// TestRedactingReaderNonJSONErrorEvent: a stream's error event that is
// not JSON and does not say "error" on its data line
// ("event: error\ndata: key=…") has the key redacted, as has a key split
// across two data lines; ordinary events pass unchanged.
func TestRedactingReaderNonJSONErrorEvent(t *testing.T) {
	b := &Backend{Name: "oa", Provider: &OpenAI{APIKey: testSecret}}
	tests := []struct{ name, in, want string }{
		{"non-JSON error event", "event: error\ndata: key=" + testSecret + "\n\n", "event: error\ndata: key=[redacted]\n\n"},
		{"lower case in a data line", "data: upstream said " + strings.ToLower(testSecret) + "\n\n", "data: upstream said [redacted]\n\n"},
		{"split across data lines", "event: error\ndata: key=sk-Proj-SEC\ndata: RET-0123abcXYZ rejected\n\n",
			"event: error\ndata: key=[redacted]\ndata: [redacted] rejected\n\n"},
		{"split in three lines", "data: sk-Proj-\ndata: SECRET-01\ndata: 23abcXYZ\n\n",
			"data: [redacted]\ndata: [redacted]\ndata: [redacted]\n\n"},
		{"chat chunk unchanged", "data: {\"choices\":[{\"delta\":{\"content\":\"sk-Proj\"}}]}\n\n", "data: {\"choices\":[{\"delta\":{\"content\":\"sk-Proj\"}}]}\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := io.ReadAll(b.redactingReader(strings.NewReader(tc.in)))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRedactLineKeepsCleanLines: a line without a secret is returned
// itself, so that the stream's fast path copies nothing.
func TestRedactLineKeepsCleanLines(t *testing.T) {
	line := []byte("data: {\"id\":\"x\",\"choices\":[{\"delta\":{\"content\":\"hello\"}}]}\n")
	if out := redactLine(line, []string{testSecret}); &out[0] != &line[0] || !bytes.Equal(out, line) {
		t.Fatalf("a clean line was copied or changed: %q", out)
	}
	if allocs := testing.AllocsPerRun(100, func() { redactLine(line, []string{testSecret}) }); allocs != 0 {
		t.Fatalf("%v allocations for a clean line", allocs)
	}
	str := string(line)
	if allocs := testing.AllocsPerRun(100, func() { redactSecrets(str, []string{testSecret}) }); allocs != 0 {
		t.Fatalf("%v allocations for a clean string", allocs)
	}
}

// FuzzRedactSecrets: whatever surrounds it and however it is cased, a
// secret is never left in the output.
func FuzzRedactSecrets(f *testing.F) {
	f.Add("before ", "after", false)
	f.Add(`{"error":"`, `"}`, true)
	f.Fuzz(func(t *testing.T, pre, post string, upper bool) {
		s := testSecret
		if upper {
			s = strings.ToUpper(s)
		}
		out := redactSecrets(pre+s+post, []string{testSecret})
		if strings.Contains(strings.ToLower(out), strings.ToLower(testSecret)) {
			t.Fatalf("secret left in %q", out)
		}
	})
}
