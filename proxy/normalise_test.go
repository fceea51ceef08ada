package proxy

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// pathAttacks are the paths of issue 23 (items 4 and 5) and their
// variants, as a caller escapes them: the fuzz target's seeds.
var pathAttacks = []string{
	"/v1//chat/completions",
	"/openai/v1//chat/completions",
	"/v1/x/../chat/completions",
	"/v1/files/../../admin",
	"/v1/files/%2e%2e/%2e%2e/admin",
	"/v1/files/%2E%2E/%2e%2E/admin",
	"/v1/files/..%2f..%2fadmin",
	"/v1/files/..%2F..%2Fadmin",
	"/v1/files/%252e%252e/%252e%252e/admin",
	"/v1/files/%252E%252E%252Fadmin",
	"/v1/files/.%2e/admin",
	"/v1/files/..;/admin",
	"/v1/files/..\\admin",
	"/v1/files/..%5cadmin",
	"/v1/files/./file-1",
	"/v1/files/.../admin",
	"/v1/files/%2e/admin",
	"/v1/files/file-1%00",
	"/v1/files/file-1%",
	"/v1/files/file-1%zz",
	"/v1/chat/completions/..",
	"/v1/organization/admin_api_keys",
	"/v1/realtime/client_secrets",
	"/v1/chat/completions/chatcmpl-1",
	"/v1/files/file-abc/content",
	"/v1/",
	"//v1///files//",
	"/",
	"",
}

// TestNormalisePath: paths whose meaning is plain are normalised (empty
// segments dropped, escapes of plain bytes decoded); any other is refused
// with 400 invalid_path.
func TestNormalisePath(t *testing.T) {
	tests := []struct {
		in, want string // want "" is refused
	}{
		{"/v1/chat/completions", "/v1/chat/completions"},
		{"/v1/chat/completions/", "/v1/chat/completions"},
		{"/v1//chat/completions", "/v1/chat/completions"},
		{"/openai/v1//chat/completions", "/openai/v1/chat/completions"},
		{"//v1///files//", "/v1/files"},
		{"/v1/files/file-abc/content", "/v1/files/file-abc/content"},
		{"/v1/chat/complet%69ons", "/v1/chat/completions"},
		{"/openai/deployments/gpt-4o.mini/chat/completions", "/openai/deployments/gpt-4o.mini/chat/completions"},
		{"/v1/files/file.1", "/v1/files/file.1"},
		{"/", "/"},
		{"/v1/x/../chat/completions", ""},
		{"/v1/files/../../admin", ""},
		{"/v1/files/%2e%2e/%2e%2e/admin", ""},
		{"/v1/files/%2E%2e/admin", ""},
		{"/v1/files/..%2f..%2fadmin", ""},
		{"/v1/files/..%2Fadmin", ""},
		{"/v1/files/%252e%252e/admin", ""},
		{"/v1/files/..;/admin", ""},
		{"/v1/files/..\\admin", ""},
		{"/v1/files/..%5cadmin", ""},
		{"/v1/files/./x", ""},
		{"/v1/files/.../x", ""},
		{"/v1/files/file%2e1", ""},
		{"/v1/files/a%20b", ""},
		{"/v1/files/a%00", ""},
		{"/v1/files/a%", ""},
		{"/v1/files/a%g0", ""},
		{"/v1/files/caf\xc3\xa9", ""},
		{"v1/files", ""},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := normalisePath(tc.in)
			if tc.want == "" {
				var e *apiError
				if !errors.As(err, &e) || e.status != 400 || e.code != "invalid_path" {
					t.Fatalf("normalisePath(%q) = %q, %v; want a 400 invalid_path", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("normalisePath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzNormalisePath checks the normaliser's properties on any escaped
// path: a path it accepts comes out starting with "/", without empty or
// dot segments, without a byte an escape could decode further (so no
// backend reads it differently), unchanged when normalised again, and in
// the API root it was sent to (its first segment is the first non-empty
// one sent, decoded); what it refuses is a 400 invalid_path. A path that
// decodes to a dot segment, or holds an escaped slash, dot, backslash or
// percent, is always refused.
func FuzzNormalisePath(f *testing.F) {
	for _, p := range pathAttacks {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := normalisePath(in)
		if err != nil {
			var e *apiError
			if !errors.As(err, &e) || e.status != 400 || e.code != "invalid_path" {
				t.Fatalf("normalisePath(%q): %v, not a 400 invalid_path", in, err)
			}
			return
		}
		if mustRefuse(in) {
			t.Fatalf("normalisePath(%q) = %q, want it refused", in, out)
		}
		if !strings.HasPrefix(out, "/") || out != "/" && strings.HasSuffix(out, "/") {
			t.Fatalf("normalisePath(%q) = %q: not one leading slash and no trailing one", in, out)
		}
		segs := strings.Split(out[1:], "/")
		for _, s := range segs {
			if out != "/" && (s == "" || strings.Trim(s, ".") == "") {
				t.Fatalf("normalisePath(%q) = %q: empty or dot segment %q", in, out, s)
			}
			for i := 0; i < len(s); i++ {
				if !pathByte(s[i]) {
					t.Fatalf("normalisePath(%q) = %q: byte %#02x in a segment", in, out, s[i])
				}
			}
		}
		if again, err := normalisePath(out); err != nil || again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, out, again, err)
		}
		if first := firstSegment(in); out != "/" && segs[0] != first {
			t.Fatalf("normalisePath(%q) = %q: left its root %q", in, out, first)
		}
		if plainPath(in) {
			if dec, err := decodePath(in); err != nil || dec != in {
				t.Fatalf("plainPath(%q), but decoding makes %q, %v", in, dec, err)
			}
		}
	})
}

// TestPlainPathIsTakenAsItIs: a plain path (every API call's) is
// normalised without a copy; one that is not is decoded.
func TestPlainPathIsTakenAsItIs(t *testing.T) {
	for _, tt := range []struct {
		path  string
		plain bool
	}{
		{"/v1/chat/completions", true},
		{"/openai/deployments/gpt-4o/chat/completions", true},
		{"/v1/files/file-abc.jsonl", true},
		{"/", false},
		{"/v1/", false},
		{"//v1/chat", false},
		{"/v1/./chat", false},
		{"/v1/../chat", false},
		{"/v1/..", false},
		{"/v1/%63hat", false},
		{"v1/chat", false},
		{"/v1/ch;at", false},
	} {
		if got := plainPath(tt.path); got != tt.plain {
			t.Errorf("plainPath(%q) = %v, want %v", tt.path, got, tt.plain)
		}
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(100, func() { normalisePath("/v1/chat/completions") }); n != 0 {
		t.Errorf("normalising a plain path made %v allocations, want 0", n)
	}
}

// mustRefuse reports whether the escaped path in holds what
// normalisePath must refuse whatever else it holds: a segment that
// decodes to dots alone, or an escaped '.', '/', '\' or '%'.
func mustRefuse(in string) bool {
	for s := range strings.SplitSeq(in, "/") {
		dec, err := url.PathUnescape(s)
		if err != nil {
			return true
		}
		if s != "" && strings.Trim(dec, ".") == "" {
			return true
		}
		low := strings.ToLower(s)
		for _, esc := range []string{"%2e", "%2f", "%5c", "%25"} {
			if strings.Contains(low, esc) {
				return true
			}
		}
	}
	return false
}

// firstSegment is the first non-empty segment of the escaped path in,
// decoded.
func firstSegment(in string) string {
	for s := range strings.SplitSeq(in, "/") {
		if s != "" {
			dec, _ := url.PathUnescape(s)
			return dec
		}
	}
	return ""
}
