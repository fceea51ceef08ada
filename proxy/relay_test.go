package proxy

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// chunkReader returns its chunks one Read at a time, then err.
type chunkReader struct {
	chunks []string
	err    error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, c.err
	}
	n := copy(p, c.chunks[0])
	c.chunks = c.chunks[1:]
	return n, nil
}

func TestCopyBodyTerminatesPartialEvent(t *testing.T) {
	broken := errors.New("reset")
	tests := []struct {
		name   string
		chunks []string
		err    error
		want   string
	}{
		{"clean end", []string{"data: a\n\n", "data: b\n\n"}, io.EOF, "data: a\n\ndata: b\n\n"},
		{"break at event boundary", []string{"data: a\n\n"}, broken, "data: a\n\n"},
		{"break mid-line", []string{"data: a\n\n", "data: {\"par"}, broken, "data: a\n\ndata: {\"par\n\n"},
		{"break after one newline", []string{"data: a\n"}, broken, "data: a\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			c := &bodyCapture{limit: 1 << 20}
			_, err := copyBody(w, &chunkReader{chunks: tc.chunks, err: tc.err}, true, &streamBufs, c)
			if got, want := string(c.b.Response), strings.Join(tc.chunks, ""); got != want {
				t.Errorf("captured %q, want what the backend sent, %q", got, want)
			}
			if (tc.err == io.EOF) != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if got := w.Body.String(); got != tc.want {
				t.Fatalf("wrote %q, want %q", got, tc.want)
			}
			if !w.Flushed {
				t.Fatal("stream not flushed")
			}
		})
	}
}
