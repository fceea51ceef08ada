package route

import (
	"bytes"
	"errors"
	"time"

	"github.com/switchover-gw/switchover/translate"
)

// The stall rule. Once a stream's content flows (see commit.go), a
// backend that stops sending ends the stream with the error event after
//
//	min(idle timeout, max(StallFactor × the longest gap so far, StallFloor))
//
// of silence, measured from its last event (comments do not count) and
// only while the gateway waits on the backend, not while the client is
// slow to read. The gaps are the stream's own: the waits between two
// events, the first of which was a steady one. The rule holds only after
// a steady event, one in the middle of the answer's text or arguments
// (an OpenAI-style chunk, an Anthropic text or input_json delta, a
// Responses ".delta", a Gemini chunk that is not a thought): after any
// other event (a block or item ended, a tool's progress, reasoning, a
// thinking delta) a backend may think or run a tool for long, and only
// the idle timeout applies, as before the content. A healthy slow stream
// whose gaps are long but regular raises its own bound; a reasoning
// model's long wait before its first content is the first-byte
// timeout's, never this rule's.
//
// A Backend's IdleTimeout of zero turns the rule off with the idle bound.
const (
	// StallFactor times the longest gap a stream has shown is how long
	// it may fall silent after a steady event.
	StallFactor = 8
	// StallFloor is the least a stream may fall silent after a steady
	// event, whatever its gaps.
	StallFloor = 15 * time.Second
)

// errStreamStalled ends a stream whose backend fell silent, after content
// had flowed, for far longer than the stream's own gaps.
var errStreamStalled = errors.New("switchover: the stream stalled: no event for far longer than its own gaps")

// stallPrefix is how much of a data line the stall watch keeps to tell a
// steady event; maxEventName bounds the `event:` name it keeps.
const (
	stallPrefix  = 256
	maxEventName = 64
)

// geminiThought marks a Gemini part that is a thought (its key; a string
// value cannot hold the bytes `"thought"` unescaped).
const geminiThought = `"thought"`

// stallWatch follows a committed stream, line by line, for the stall
// rule: whether its last event was steady, the read time since it, and
// the longest gap after a steady event. Requires external locking (one
// reader: the body's).
type stallWatch struct {
	format translate.Format
	steady bool
	waited time.Duration // the reads' waits since the last event
	maxGap time.Duration

	// The line being read: its first bytes, their count, and for Gemini
	// whether the thought key was seen and the last bytes before this
	// piece (the key may cross two reads).
	pre     [stallPrefix]byte
	n       int
	thought bool
	tail    [len(geminiThought) - 1]byte
	tailLen int
	// The event's name, from its `event:` line, if it had one.
	event    [maxEventName]byte
	eventLen int
}

// newStallWatch returns the stall watch of a stream in format f.
func newStallWatch(f translate.Format) *stallWatch { return &stallWatch{format: f} }

// limit returns how long the next read may wait on the backend, given
// the idle timeout idle (positive), and the cause that ends it then: the
// idle timeout, or the stall rule once a steady event was last.
func (s *stallWatch) limit(idle time.Duration) (time.Duration, error) {
	if !s.steady {
		return idle, errIdleTimeout
	}
	bound := min(max(StallFactor*s.maxGap, StallFloor), idle)
	return bound - s.waited, errStreamStalled
}

// saw takes what one read returned, p, after waiting waited on the
// backend.
func (s *stallWatch) saw(p []byte, waited time.Duration) {
	s.waited += waited
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.keep(p)
			return
		}
		s.keep(p[:i])
		s.endLine()
		p = p[i+1:]
	}
}

// keep takes a piece of the line being read.
func (s *stallWatch) keep(p []byte) {
	if s.n < stallPrefix {
		copy(s.pre[s.n:], p)
	}
	s.n += len(p)
	if s.format == translate.Gemini && !s.thought {
		s.lookForThought(p)
	}
}

// lookForThought notes whether the thought key is in p, or across the
// end of the line's earlier pieces and p.
func (s *stallWatch) lookForThought(p []byte) {
	var joint [2 * len(geminiThought)]byte
	k := copy(joint[:], s.tail[:s.tailLen])
	k += copy(joint[k:], p[:min(len(p), len(s.tail))])
	if bytes.Contains(p, []byte(geminiThought)) || bytes.Contains(joint[:k], []byte(geminiThought)) {
		s.thought = true
		return
	}
	if len(p) >= len(s.tail) {
		s.tailLen = copy(s.tail[:], p[len(p)-len(s.tail):])
		return
	}
	// Keep the last bytes of the tail and p together.
	keep := joint[max(k-len(s.tail), 0):k]
	s.tailLen = copy(s.tail[:], keep)
}

// endLine handles the line read: an event's name, its data (the event
// itself), or the blank line that ends it.
func (s *stallWatch) endLine() {
	line := bytes.TrimRight(s.pre[:min(s.n, stallPrefix)], "\r")
	thought := s.thought
	s.n, s.thought, s.tailLen = 0, false, 0
	switch {
	case len(line) == 0:
		s.eventLen = 0
	case bytes.HasPrefix(line, []byte("event:")):
		s.eventLen = copy(s.event[:], bytes.TrimSpace(line[len("event:"):]))
	case bytes.HasPrefix(line, []byte("data:")):
		if s.steady {
			s.maxGap = max(s.maxGap, s.waited)
		}
		s.waited = 0
		s.steady = s.steadyEvent(s.event[:s.eventLen], line[len("data:"):], thought)
	}
}

// steadyEvent reports whether an event (its name, if it had an `event:`
// line, and the start of its data) is in the middle of the answer's text
// or arguments, where the stream's gaps are its pace, not a pause for
// thought or a tool.
func (s *stallWatch) steadyEvent(name, data []byte, thought bool) bool {
	switch s.format {
	case translate.Anthropic:
		if len(name) == 0 {
			name = prefixType(data)
		}
		return string(name) == "content_block_delta" &&
			!bytes.Contains(data, []byte(`"thinking_delta"`)) && !bytes.Contains(data, []byte(`"signature_delta"`))
	case translate.Responses:
		if len(name) == 0 {
			name = prefixType(data)
		}
		return bytes.HasPrefix(name, []byte("response.")) && bytes.HasSuffix(name, []byte(".delta"))
	case translate.Gemini:
		return !thought
	}
	return true
}

// prefixType is the value of the first "type" key in the start of an
// event's JSON data ("" if there is none in it), read without parsing
// the whole: the data may be cut short.
func prefixType(data []byte) []byte {
	i := bytes.Index(data, []byte(`"type"`))
	if i < 0 {
		return nil
	}
	rest := bytes.TrimLeft(data[i+len(`"type"`):], " \t")
	rest, ok := bytes.CutPrefix(rest, []byte(":"))
	if !ok {
		return nil
	}
	rest, ok = bytes.CutPrefix(bytes.TrimLeft(rest, " \t"), []byte(`"`))
	if !ok {
		return nil
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil
	}
	return rest[:end]
}
