package route

import (
	"bytes"
	"encoding/base32"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/switchover-gw/switchover/translate"
)

// Objects that live on one backend (a stored response, a file, a batch)
// must be reached there: a follow-up naming a response another region
// made has no context anywhere else. The engine writes the backend that
// made an object into the object's id as the client sees it, so that any
// replica can route a later call to the owner with no shared store, and
// takes it out again before the id goes back upstream.
//
// A signed tag (see Tagger) keeps the provider's prefix and separator,
// then "s2", the backend's name in lower-case base32 (letters and the
// digits 2 to 7), "0", sixteen base32 characters of a MAC over the
// backend, the tenant the object belongs to and the provider's id, and
// the provider's id after its separator:
//
//	resp_68a1f0c2…  made by aoai-weu  ->  resp_s2mfxw62jnxwk4q0<16 MAC chars>68a1f0c2…
//
// The older, unsigned form ("so" in place of "s2", no MAC) is what TagID
// writes; only a Tagger that is Open (a gateway without keys) accepts it.
//
// The characters stay those of the provider's ids (letters, digits, "_",
// "-"), so ids remain safe in paths and in clients that check them. A
// backend renamed in the configuration no longer owns the ids it made.

// ownerEncoding is base32 in lower case without padding: it never has a
// "0", which ends the name.
var ownerEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

const (
	ownerMark  = "so" // the unsigned tag
	signedMark = "s2" // the signed tag
)

// maxIDPrefix bounds where the provider's separator may stand.
const maxIDPrefix = 16

// splitID returns the provider's prefix with its separator ("resp_",
// "file-") and the rest; an id without one has an empty prefix.
func splitID(id string) (prefix, rest string) {
	for i := 0; i < len(id) && i <= maxIDPrefix; i++ {
		c := id[i]
		if c == '_' || c == '-' {
			return id[:i+1], id[i+1:]
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			break
		}
	}
	return "", id
}

// TagID returns id with backend written into it as its owner, in the
// unsigned form that only an Open Tagger accepts. An id already tagged is
// returned as it is.
func TagID(id, backend string) string {
	if id == "" || backend == "" {
		return id
	}
	if _, _, ok := UntagID(id); ok {
		return id
	}
	prefix, rest := splitID(id)
	return prefix + ownerMark + ownerEncoding.EncodeToString([]byte(backend)) + "0" + rest
}

// UntagID splits a tagged id, signed or not, into its owner and the
// provider's id, without checking a signature. ok is false for an id
// that is not tagged.
func UntagID(id string) (backend, orig string, ok bool) {
	t, ok := parseTag(id)
	if !ok {
		return "", id, false
	}
	return t.backend, t.orig, true
}

// idTag is a tagged id taken apart.
type idTag struct {
	backend, orig string
	mac           string // "" for the unsigned form
}

// parseTag takes a tagged id apart; ok is false for an id that is not
// tagged (a provider's own id).
func parseTag(id string) (t idTag, ok bool) {
	prefix, rest := splitID(id)
	signed := strings.HasPrefix(rest, signedMark)
	if !signed && !strings.HasPrefix(rest, ownerMark) {
		return idTag{}, false
	}
	enc := rest[len(ownerMark):]
	end := strings.IndexByte(enc, '0')
	if end <= 0 {
		return idTag{}, false
	}
	name, err := ownerEncoding.DecodeString(enc[:end])
	if err != nil || len(name) == 0 || !printableName(name) {
		return idTag{}, false
	}
	after := enc[end+1:]
	if signed {
		if len(after) < macChars || !isMACText(after[:macChars]) {
			return idTag{}, false
		}
		t.mac, after = after[:macChars], after[macChars:]
	}
	t.backend, t.orig = string(name), prefix+after
	return t, true
}

func printableName(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// statefulPrefixes are the id prefixes of objects that live on the
// backend that made them: responses, files, uploads, batches, vector
// stores, fine-tuning jobs, conversations, containers, Anthropic message
// batches.
var statefulPrefixes = []string{"resp_", "file-", "file_", "upload_", "batch_", "vs_", "ftjob-", "conv_", "cntr_", "msgbatch_"}

// ownedKeys are the JSON members whose value (or, for the plural ones,
// whose array's values) names an object that lives on one backend. Only
// these are tagged in answers and untagged in requests: a caller's text
// that happens to look like an id is never touched.
var ownedKeys = map[string]bool{
	"id": true, "previous_response_id": true, "response_id": true,
	"file_id": true, "input_file_id": true, "output_file_id": true, "error_file_id": true,
	"batch_id": true, "vector_store_id": true, "upload_id": true, "conversation_id": true,
	"conversation": true, "container_id": true, "first_id": true, "last_id": true,
	"file_ids": true, "vector_store_ids": true, "response_ids": true,
}

// storedChatPrefix is the prefix of chat completion ids. A chat completion
// made with "store": true lives on the backend that made it, but the
// prefix is not in statefulPrefixes: a request body naming an untagged
// one is not refused (chat bodies are not calls on stored objects).
// Answers tag it (tagsInAnswer): those of stored chats, and of calls on
// them.
const storedChatPrefix = "chatcmpl-"

// tagsInAnswer reports whether an answer's id value v is tagged: a
// stateful object's, or a stored chat completion's (or its messages').
func tagsInAnswer(v string) bool {
	return isStateful(v) || strings.HasPrefix(v, storedChatPrefix)
}

func isStateful(id string) bool {
	if strings.HasPrefix(id, "batch_req_") { // a line of a batch's output, not an object
		return false
	}
	for _, p := range statefulPrefixes {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// TagIDs returns body with backend tagged into the ids of stateful
// objects it names (see ownedKeys and statefulPrefixes), at any depth. A
// body with none is returned as it is.
func TagIDs(body []byte, backend string) []byte {
	return rewriteStrings(body, func(key, v string) (string, bool) {
		if !ownedKeys[key] || !tagsInAnswer(v) {
			return "", false
		}
		if _, _, ok := UntagID(v); ok {
			return "", false
		}
		return TagID(v, backend), true
	})
}

// UntagIDs returns body with every tagged id in it (any string value)
// replaced by the provider's id, and the owner they name. Ids that name
// different owners are an error: no one backend holds them all.
func UntagIDs(body []byte) ([]byte, string, error) {
	var owner string
	var conflict error
	out := rewriteStrings(body, func(key, v string) (string, bool) {
		if !ownedKeys[key] {
			return "", false
		}
		b, orig, ok := UntagID(v)
		if !ok {
			return "", false
		}
		if owner == "" {
			owner = b
		} else if owner != b && conflict == nil {
			conflict = &OwnerConflictError{First: owner, Second: b}
		}
		return orig, true
	})
	if conflict != nil {
		return body, "", conflict
	}
	return out, owner, nil
}

// OwnerConflictError is a request that names objects owned by two
// backends.
type OwnerConflictError struct{ First, Second string }

func (e *OwnerConflictError) Error() string {
	return "the request names objects held by two backends, " + e.First + " and " + e.Second + "; no one backend can answer it"
}

// rewriteStrings scans body, JSON or SSE text whose data lines are JSON,
// for string values of the members in ownedKeys, and replaces those for
// which fn returns a replacement. key is the member the value belongs to:
// for a value in an array, the array's member ("" at the top or in an
// array of arrays, which is never offered). Only strings without escapes
// are offered: ids never have any. The scan is lexical: it needs no
// valid document, so it works on SSE events too, and on pretty-printed
// JSON. It allocates nothing for a body with no value to offer, and
// only the value's string for one that has (it runs on every request
// body when keys are required).
func rewriteStrings(body []byte, fn func(key, v string) (string, bool)) []byte {
	var out []byte
	last := 0      // body[last:] not yet copied to out
	var key []byte // the member whose value comes next
	// stack holds, for each open array, its member; objects push a frame
	// that is not an array. It tracks MaxJSONDepth levels; deeper ones
	// are only counted (in deeper), so that a body of nested brackets
	// costs no memory: their strings are offered with no member.
	type frame struct {
		key   []byte
		array bool
	}
	var stackBuf [16]frame
	stack := stackBuf[:0]
	deeper := 0
	inArray := func() ([]byte, bool) {
		if n := len(stack); deeper == 0 && n > 0 && stack[n-1].array {
			return stack[n-1].key, true
		}
		return nil, false
	}
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{', '[':
			switch {
			case len(stack) == MaxJSONDepth:
				deeper++
			case body[i] == '{':
				stack = append(stack, frame{})
			default:
				stack = append(stack, frame{key: key, array: true})
			}
			key = nil
			continue
		case '}', ']':
			if deeper > 0 {
				deeper--
			} else if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			key = nil
			continue
		case '"':
		default:
			continue
		}
		// A string: find its end, noting escapes.
		j, escaped := i+1, false
		for j < len(body) && body[j] != '"' && body[j] != '\n' {
			if body[j] == '\\' {
				escaped = true
				j++
			}
			j++
		}
		if j >= len(body) || body[j] != '"' {
			i = j - 1
			continue
		}
		s := body[i+1 : j]
		// A key is followed by a colon; a value is not.
		k := j + 1
		for k < len(body) && (body[k] == ' ' || body[k] == '\t' || body[k] == '\r') {
			k++
		}
		if k < len(body) && body[k] == ':' {
			key = s
			i = j
			continue
		}
		valueKey := key
		if ak, ok := inArray(); ok {
			valueKey = ak // the array's member
		}
		if !escaped {
			if owned, ok := ownedKeyNames[string(valueKey)]; ok {
				if r, ok := fn(owned, string(s)); ok {
					out = append(out, body[last:i+1]...)
					out = append(out, r...)
					last = j
				}
			}
		}
		if _, ok := inArray(); !ok {
			key = nil
		}
		i = j
	}
	if out == nil {
		return body
	}
	return append(out, body[last:]...)
}

// ownedKeyNames maps each of ownedKeys to itself: rewriteStrings finds a
// member's name there without making a string of its bytes.
var ownedKeyNames = func() map[string]string {
	m := make(map[string]string, len(ownedKeys))
	for k := range ownedKeys {
		m[k] = k
	}
	return m
}()

// lineReader passes a stream on with each complete line replaced by what
// fn makes of it (the line given with its "\n"). It keeps at most one
// unfinished line, bounded by maxLine (a longer one goes through as it
// is), so an event that ends its line is passed on at once.
type lineReader struct {
	r    io.Reader
	fn   func(line []byte) []byte
	line []byte // an unfinished line read from r
	out  []byte // processed bytes not yet returned
	err  error
	// onEnd, if set, is called when a read returns an error (the end of
	// the stream, or its failure) and when the body is closed.
	onEnd func()
}

// lineBufs are what a lineReader reads into when it cannot read straight
// into the caller's buffer (a line split between two reads, a changed
// line). A buffer goes back once its bytes are taken, so a stream does
// not hold one while it waits for its next event.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 2<<10); return &b }}

func (t *lineReader) Read(p []byte) (int, error) {
	if len(t.out) == 0 && len(t.line) == 0 && t.err == nil && len(p) > 0 {
		// The common case: whole lines, none changed, read straight into
		// p with nothing held or copied.
		n, err := t.r.Read(p)
		t.err = err
		if n == 0 {
			if err != nil {
				return 0, t.ended(err)
			}
			return 0, nil
		}
		if t.unchanged(p[:n]) {
			return n, nil
		}
		t.take(p[:n])
		if err != nil && len(t.out) == 0 && len(t.line) == 0 {
			return 0, t.ended(err)
		}
	}
	for len(t.out) == 0 {
		if t.err != nil {
			if len(t.line) > 0 {
				t.out, t.line = t.line, nil
				break
			}
			return 0, t.ended(t.err)
		}
		bp := lineBufs.Get().(*[]byte)
		n, err := t.r.Read(*bp)
		t.err = err
		t.take((*bp)[:n])
		lineBufs.Put(bp)
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

// ended calls onEnd, if set, as a read returns err.
//
//go:noinline
func (t *lineReader) ended(err error) error {
	if t.onEnd != nil {
		t.onEnd()
	}
	return err
}

// unchanged reports whether b is whole lines that fn leaves as they are.
func (t *lineReader) unchanged(b []byte) bool {
	if b[len(b)-1] != '\n' {
		return false
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b[:i+1]
		if out := t.fn(line); len(out) != len(line) || &out[0] != &line[0] {
			return false
		}
		b = b[i+1:]
	}
	return true
}

func (t *lineReader) take(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.line = append(t.line, b...)
			if len(t.line) > maxLine {
				t.out = append(t.out, t.line...)
				t.line = t.line[:0]
			}
			return
		}
		line := append(t.line, b[:i+1]...)
		t.out = append(t.out, t.fn(line)...)
		t.line = t.line[:0]
		b = b[i+1:]
	}
}

// chain makes t pass each line through next's function after its own,
// as if next read t, in one reader: a stream's line readers (redaction,
// ids, usage) are one frame under its wait and one set of buffers, not
// one each. next's own reader is not used. The functions return whole
// lines; should one return several, the next gets each in turn, and a
// last piece without its newline as it is.
func (t *lineReader) chain(next *lineReader) {
	first, then := t.fn, next.fn
	t.fn = func(line []byte) []byte {
		out := first(line)
		if i := bytes.IndexByte(out, '\n'); i < 0 || i == len(out)-1 {
			return then(out)
		}
		var joined []byte
		for len(out) > 0 {
			i := bytes.IndexByte(out, '\n')
			if i < 0 {
				joined = append(joined, then(out)...)
				break
			}
			joined = append(joined, then(out[:i+1])...)
			out = out[i+1:]
		}
		return joined
	}
}

// taggingReader is a lineReader that tags the stateful ids of an SSE
// stream with backend (unsigned).
func taggingReader(r io.Reader, backend string) *lineReader {
	return &lineReader{r: r, fn: func(line []byte) []byte { return TagIDs(line, backend) }}
}

// taggingReader is a lineReader that tags the stateful ids of an SSE
// stream with backend and t's tenant.
func (t *Tagger) taggingReader(r io.Reader, backend string) *lineReader {
	return &lineReader{r: r, fn: func(line []byte) []byte { return t.TagIDs(line, backend) }}
}

// lineBody is a response body read through a lineReader, closed through
// the body it reads.
type lineBody struct {
	*lineReader
	c io.Closer
}

func (l *lineBody) Close() error {
	err := l.c.Close()
	if l.onEnd != nil {
		l.onEnd()
	}
	return err
}

// tagsIDs reports whether the answers to r name objects that live on the
// backend that made them: Responses (and their compaction), chat
// completions made with "store": true, and calls on stored objects.
func (r *Request) tagsIDs() bool {
	return r.Op == Responses || r.Op == ResponsesCompact || r.Path != "" || r.storedChat
}

// tagsAnswer reports whether an attempt's answer to r, from a backend
// whose native format is native for a client speaking client, has its
// ids tagged (tagsIDs). A stored chat translated from another API (an
// Anthropic or Gemini backend) is not tagged: that backend keeps no chat
// completion the id could reach, and an untagged id is refused by calls
// on stored chats.
func (r *Request) tagsAnswer(native, client translate.Format) bool {
	return r.tagsIDs() && !(r.storedChat && native != client)
}

// isJSON reports whether a response's Content-Type is JSON. A file's
// content (application/octet-stream, JSONL) is passed on as it is, even
// when its lines hold ids.
func isJSON(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "application/json"
}
