package route

import (
	"errors"
	"io"
	"strings"
	"testing"
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
