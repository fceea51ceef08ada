package route

import "testing"

func TestRedactTokens(t *testing.T) {
	const tok = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwczovL2NvZ25pdGl2ZSJ9.c2lnbmF0dXJl"
	tests := []struct{ name, in, want string }{
		{"plain text", "the deployment does not exist", "the deployment does not exist"},
		{"bearer header echoed", "got Authorization: Bearer opaque-token_123.x", "got Authorization: Bearer [redacted]"},
		{"bearer in lower case", "bearer abc.def-ghi", "Bearer [redacted]"},
		{"bearer url-encoded", "auth=Bearer%20abcdef12", "auth=Bearer [redacted]"},
		{"bare jwt", "token " + tok + " expired", "token [redacted] expired"},
		{"word bearer alone", "the bearer of bad news", "the bearer of bad news"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := redactTokens(tc.in); got != tc.want {
				t.Fatalf("redactTokens(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
