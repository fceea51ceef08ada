package proxy

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// RequestLog writes the one log line per request, the gateway's most
// frequent write, in exactly the bytes log/slog's TextHandler or
// JSONHandler would write for the same record, for a fraction of their
// cost: the line's fields are known, so it is appended to a pooled buffer
// in one pass, without building attributes, copying a record or looking
// up the caller. Log processors see one format, whichever wrote a line.
//
// Each line is one Write to the output. It is safe for concurrent use
// when the output is (the gateway's buffered log writer is).
type RequestLog struct {
	w     io.Writer
	json  bool
	level slog.Leveler
}

// NewRequestLog returns a RequestLog writing to w in format "json" or
// "text" (anything else is text), lines below level left out. A nil
// level means slog.LevelInfo.
func NewRequestLog(w io.Writer, format string, level slog.Leveler) *RequestLog {
	if level == nil {
		level = slog.LevelInfo
	}
	return &RequestLog{w: w, json: format == "json", level: level}
}

// enabled reports whether lines at level are written.
func (rl *RequestLog) enabled(level slog.Level) bool { return level >= rl.level.Level() }

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// line is one line being appended, in the text or JSON form.
type line struct {
	b    []byte
	bp   *[]byte // the pooled slice b came from
	json bool
}

func (rl *RequestLog) begin(t time.Time, level slog.Level, msg string) line {
	bp := lineBufs.Get().(*[]byte)
	l := line{b: (*bp)[:0], bp: bp, json: rl.json}
	if l.json {
		l.b = append(l.b, `{"time":"`...)
		l.b = t.AppendFormat(l.b, time.RFC3339Nano)
		l.b = append(l.b, `","level":"`...)
		l.b = append(l.b, level.String()...)
		l.b = append(l.b, `","msg":`...)
		l.b = appendJSONString(l.b, msg)
		return l
	}
	l.b = append(l.b, "time="...)
	l.b = appendRFC3339Millis(l.b, t)
	l.b = append(l.b, " level="...)
	l.b = append(l.b, level.String()...)
	l.b = append(l.b, " msg="...)
	l.b = appendTextString(l.b, msg)
	return l
}

func (l *line) key(k string) {
	if l.json {
		l.b = append(l.b, ',', '"')
		l.b = append(l.b, k...) // keys are this package's constants: no escapes
		l.b = append(l.b, '"', ':')
		return
	}
	l.b = append(l.b, ' ')
	l.b = append(l.b, k...)
	l.b = append(l.b, '=')
}

func (l *line) str(k, v string) {
	l.key(k)
	if l.json {
		l.b = appendJSONString(l.b, v)
	} else {
		l.b = appendTextString(l.b, v)
	}
}

func (l *line) int(k string, v int64) {
	l.key(k)
	l.b = strconv.AppendInt(l.b, v, 10)
}

func (l *line) bool(k string, v bool) {
	l.key(k)
	l.b = strconv.AppendBool(l.b, v)
}

// end writes the line out and returns its buffer to the pool.
func (rl *RequestLog) end(l line) {
	if l.json {
		l.b = append(l.b, '}')
	}
	l.b = append(l.b, '\n')
	rl.w.Write(l.b)
	if cap(l.b) <= 16<<10 { // a huge line's buffer is not kept
		*l.bp = l.b[:0]
		lineBufs.Put(l.bp)
	}
}

// appendRFC3339Millis is slog's text time: RFC 3339 with exactly three
// decimals.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the fourth decimal
}

// appendTextString appends s as slog's TextHandler does: bare, or quoted
// (strconv.Quote) when empty or holding a space, '=', a quote, a control
// or non-printing character, or invalid UTF-8.
func appendTextString(b []byte, s string) []byte {
	if textNeedsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func textNeedsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c != '\\' && (c == ' ' || c == '=' || !jsonSafe(c)) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// jsonSafe reports whether the ASCII byte c goes into a JSON string as it
// is: printable, and neither a quote nor a backslash. (slog does not
// escape HTML characters.)
func jsonSafe(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' }

// appendJSONString appends s quoted as slog's JSONHandler does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, '\\')
			switch c {
			case '\\', '"':
				b = append(b, c)
			case '\n':
				b = append(b, 'n')
			case '\r':
				b = append(b, 'r')
			case '\t':
				b = append(b, 't')
			default:
				b = append(b, 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
