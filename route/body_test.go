package route

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

// TestReadToFirstEventKeepsTheWholeStream checks that the reader
// readToFirstEvent returns gives back every byte from the first event on,
// in order, whether the preamble and the first event fit its small buffer
// or cross it.
func TestReadToFirstEventKeepsTheWholeStream(t *testing.T) {
	long := strings.Repeat("x", 3*firstEventBuffer)
	event := "data: {\"choices\":[{\"delta\":{\"content\":\"" + long + "\"}}]}\n\n"
	tests := []struct {
		name, preamble, rest string
	}{
		{"no preamble", "", "data: 1\n\ndata: [DONE]\n\n"},
		{"keep-alive comment", ": keep-alive\n\n", "data: 1\n\n"},
		{"comment longer than the buffer", ": " + long + "\n", "data: 1\n\n"},
		{"first event longer than the buffer", ": ping\r\n", event + "data: [DONE]\n\n"},
		{"preamble ends at the buffer's edge", ":" + strings.Repeat("y", firstEventBuffer-2) + "\n", event},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// iotest-style one byte at a time and whole: both must agree.
			for _, src := range []io.Reader{strings.NewReader(tt.preamble + tt.rest), &oneByte{r: strings.NewReader(tt.preamble + tt.rest)}} {
				rest, err := readToFirstEvent(src)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(rest)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tt.rest {
					t.Fatalf("rest = %.60q… (%d bytes), want %.60q… (%d bytes)", got, len(got), tt.rest, len(tt.rest))
				}
			}
		})
	}
}

func TestReadToFirstEventErrors(t *testing.T) {
	if _, err := readToFirstEvent(strings.NewReader(": only a comment\n")); err != io.EOF {
		t.Fatalf("comment then EOF: err = %v, want EOF", err)
	}
	big := strings.Repeat(": keep-alive\n", maxPreamble/13+2)
	if _, err := readToFirstEvent(strings.NewReader(big + "data: 1\n\n")); !errors.Is(err, errNoEvent) {
		t.Fatalf("preamble over %d bytes: err = %v, want errNoEvent", maxPreamble, err)
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// TestLongStreamLetsItsPrefixGo checks that a stream whose model version
// is read keeps its first bytes only until they are all in (a long
// stream held 2 KiB for its whole life), that the version read is the one
// in them, and that it is reported only once the stream ends cleanly.
func TestLongStreamLetsItsPrefixGo(t *testing.T) {
	chunk := "data: {\"id\":\"c\",\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word\"}}]}\n\n"
	stream := strings.Repeat(chunk, 2*prefixSize/len(chunk)+2) + "data: [DONE]\n\n"
	var got []string
	b := &body{
		r: strings.NewReader(stream), release: func() {}, backend: "b",
		modelOf: func(prefix []byte) string {
			if len(prefix) > prefixSize {
				t.Errorf("prefix of %d bytes, want at most %d", len(prefix), prefixSize)
			}
			return translate.ModelOf(translate.OpenAI, prefix)
		},
		onModel: func(m string) { got = append(got, m) },
	}
	buf := make([]byte, 200)
	for read := 0; read < prefixSize+len(buf); {
		n, err := b.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	if b.prefix != nil {
		t.Errorf("%d bytes of prefix held past the first %d", len(b.prefix), prefixSize)
	}
	if got != nil {
		t.Fatalf("model reported before the end: %q", got)
	}
	if _, err := io.Copy(io.Discard, b); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "gpt-4o-2024-08-06" {
		t.Errorf("model reported %q, want once gpt-4o-2024-08-06", got)
	}
}

// TestStreamEndKeepsNoWholeLine checks that the stream's end is watched
// without a copy of lines that arrive whole, and still across reads that
// split a line.
func TestStreamEndKeepsNoWholeLine(t *testing.T) {
	s := &streamEnd{format: translate.OpenAI}
	s.scan([]byte("data: {\"choices\":[]}\n\ndata: {\"choices\":[]}\n\n"))
	if cap(s.line) != 0 {
		t.Errorf("a copy of %d bytes kept for whole lines", cap(s.line))
	}
	s.scan([]byte("data: [DO"))
	s.scan([]byte("NE]\n\n"))
	if !s.complete() {
		t.Error("[DONE] split between two reads not seen")
	}
}
