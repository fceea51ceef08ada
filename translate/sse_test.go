package translate

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// drain reads r to its end through a buffer of size n and returns what it
// read and the error that ended it (io.EOF for a clean end).
func drain(r io.Reader, n int) ([]byte, error) {
	var out []byte
	buf := make([]byte, n)
	for {
		k, err := r.Read(buf)
		out = append(out, buf[:k]...)
		if err != nil {
			return out, err
		}
	}
}

// pieceReader returns at most n bytes per Read.
type pieceReader struct {
	b []byte
	n int
}

// eventReader returns one event per Read and counts the reads.
type eventReader struct {
	events [][]byte
	reads  int
	err    error // returned once the events run out; nil means io.EOF
}

// splitEvents cuts an SSE text after each blank line (\n\n or \r\n\r\n).
func splitEvents(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i, n := bytes.Index(b, []byte("\n\n")), 2
		if j := bytes.Index(b, []byte("\r\n\r\n")); j >= 0 && (i < 0 || j < i) {
			i, n = j, 4
		}
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+n])
		b = b[i+n:]
	}
	return out
}

var errBoom = errors.New("connection reset by peer")

func TestReaderBrokenSource(t *testing.T) {
	events := splitEvents(readFile(t, "stream_anthropic_to_openai_text.in.sse"))
	src := &eventReader{events: events[:4], err: errBoom}
	got, err := drain(NewReader(src, NewAnthropicToOpenAIStream(true)), 64)
	if !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want the source's error", err)
	}
	want := "data: {\"id\":\"chatcmpl-msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"claude-sonnet-4-5-20250929\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"chatcmpl-msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"claude-sonnet-4-5-20250929\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
	if string(got) != want {
		t.Errorf("output before the break:\n%s\nwant:\n%s", got, want)
	}
	// the error is sticky
	if _, err := NewReader(&eventReader{err: errBoom}, NewAnthropicToOpenAIStream(true)).Read(make([]byte, 8)); !errors.Is(err, errBoom) {
		t.Errorf("second reader: %v", err)
	}
}

func TestReaderTruncatedSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		conv StreamConverter
	}{
		{"anthropic without stop", "stream_anthropic_to_openai_text.in.sse", NewAnthropicToOpenAIStream(true)},
		{"gemini without finishReason", "stream_gemini_to_openai_text.in.sse", NewGeminiToOpenAIStream("m", true)},
		{"openai without finish_reason", "stream_openai_to_anthropic_text.in.sse", NewOpenAIToAnthropicStream()},
		{"empty", "", NewOpenAIToAnthropicStream()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in []byte
			if tc.in != "" {
				events := splitEvents(readFile(t, tc.in))
				in = bytes.Join(events[:2], nil)
			}
			got, err := drain(NewReader(io.NopCloser(bytes.NewReader(in)), tc.conv), 1024)
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("err = %v, want ErrTruncated", err)
			}
			if bytes.Contains(got, []byte("[DONE]")) || bytes.Contains(got, []byte("message_stop")) {
				t.Errorf("a truncated stream was closed as if complete:\n%s", got)
			}
		})
	}
}

// TestReaderStreams checks that an event is converted and readable as soon
// as its blank line has arrived, without waiting for more of the source.
func TestReaderStreams(t *testing.T) {
	src := &eventReader{events: splitEvents(readFile(t, "stream_anthropic_to_openai_text.in.sse"))}
	r := NewReader(src, NewAnthropicToOpenAIStream(true))
	buf := make([]byte, 4096)
	n, err := r.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), `data: {"id":"chatcmpl-msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY"`) {
		t.Fatalf("first read: %q, %v", buf[:n], err)
	}
	if src.reads != 1 {
		t.Errorf("the first event was written after %d source reads, want 1", src.reads)
	}
}

func TestReaderClose(t *testing.T) {
	src := &closeRecorder{Reader: strings.NewReader("")}
	if err := NewReader(src, NewOpenAIToAnthropicStream()).Close(); err != nil {
		t.Fatal(err)
	}
	if !src.closed {
		t.Error("Close did not close the source")
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

// recorder is a StreamConverter that writes what it receives.
type recorder struct{ ended bool }

func TestSSEParsing(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"lf", "event: a\ndata: 1\n\ndata: 2\n\n", "[a|1][|2]<end>"},
		{"crlf", "event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n", "[a|1][|2]<end>"},
		{"multi-line data", "data: {\ndata:  \"x\": 1\ndata:}\n\n", "[|{\n \"x\": 1\n}]<end>"},
		{"comments and other fields", ": hello\nid: 7\nretry: 100\nevent: e\nfoo: bar\ndata: x\n\n", "[e|x]<end>"},
		{"no space after colon", "event:e\ndata:x\n\n", "[e|x]<end>"},
		{"field without colon", "data\n\n", "[|]<end>"},
		{"last event without blank line", "data: 1\n\ndata: 2\n", "[|1][|2]<end>"},
		{"last line without newline", "data: 1\n\ndata: 2", "[|1][|2]<end>"},
		{"name without data is no event", "event: x\n\ndata: 1\n\n", "[|1]<end>"},
		{"extra blank lines", "\n\n\ndata: 1\n\n\n\n", "[|1]<end>"},
		{"bom", "\xef\xbb\xbfdata: 1\n\n", "[|1]<end>"},
		{"empty", "", "<end>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, src := range sources[:4] {
				got, err := drain(NewReader(io.NopCloser(src.wrap([]byte(tc.in))), &recorder{}), 3)
				if err != io.EOF {
					t.Fatalf("%s: err = %v", src.name, err)
				}
				if string(got) != tc.want {
					t.Errorf("%s: got %q, want %q", src.name, got, tc.want)
				}
			}
		})
	}
}

func TestSSEEventTooLarge(t *testing.T) {
	r := NewReader(io.NopCloser(io.LimitReader(zeros{}, maxEventSize+10)), &recorder{})
	if _, err := io.Copy(io.Discard, r); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
}

type zeros struct{}

// TestChainEnd checks that Chain passes a's End through b before b's End.
func TestChainEnd(t *testing.T) {
	c := Chain(NewGeminiToOpenAIStream("m", false), &recorder{})
	out, err := c.Event(Event{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, c.End()...)
	want := `[|{"id":"chatcmpl-gemini","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"logprobs":null,"finish_reason":null}]}]` +
		`[|{"id":"chatcmpl-gemini","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}]` +
		`[|[DONE]]<end>`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}

func (r *eventReader) Read(p []byte) (int, error) {
	r.reads++
	if len(r.events) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	k := copy(p, r.events[0])
	r.events[0] = r.events[0][k:]
	if len(r.events[0]) == 0 {
		r.events = r.events[1:]
	}
	return k, nil
}

func (r *eventReader) Close() error { return nil }

func (c *closeRecorder) Close() error {
	c.closed = true
	return nil
}

func (r *recorder) Event(ev Event) ([]byte, error) {
	return []byte("[" + ev.Name + "|" + string(ev.Data) + "]"), nil
}

func (r *recorder) End() []byte {
	r.ended = true
	return []byte("<end>")
}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}
