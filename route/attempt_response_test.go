package route

import (
	"mime"
	"net/http"
	"testing"
)

// TestIsEventStream checks the in-place comparison against what
// mime.ParseMediaType decides, which IsEventStream used to call on every
// response.
func TestIsEventStream(t *testing.T) {
	tests := []struct {
		name, contentType string
		want              bool
	}{
		{"empty", "", false},
		{"json", "application/json", false},
		{"json with charset", "application/json; charset=utf-8", false},
		{"stream", "text/event-stream", true},
		{"stream upper case", "Text/Event-Stream", true},
		{"stream spaced", "  text/event-stream ", true},
		{"stream with charset", "text/event-stream; charset=utf-8", true},
		{"stream with bad parameter", "text/event-stream; charset", true},
		{"stream with duplicate parameter", "text/event-stream; a=1; a=2", false},
		{"stream prefix only", "text/event-streams", false},
		{"long s", "text/event-\u017ftream", false},
		{"kelvin", "text/event-stream\u212a", false},
		{"bad media type", "text/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.contentType != "" {
				h.Set("Content-Type", tt.contentType)
			}
			mt, _, _ := mime.ParseMediaType(tt.contentType)
			if parsed := mt == "text/event-stream"; parsed != tt.want {
				t.Fatalf("mime.ParseMediaType(%q) gives %q: the table is wrong", tt.contentType, mt)
			}
			if got := IsEventStream(h); got != tt.want {
				t.Errorf("IsEventStream(%q) = %v, want %v", tt.contentType, got, tt.want)
			}
		})
	}
}
