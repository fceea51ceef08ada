package route

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// NewMultipartRequest reads the routing fields of a multipart/form-data
// body (audio transcriptions and translations, image edits and
// variations): the "model" form field, and "stream" when it is "true".
// contentType is the request's Content-Type, whose boundary splits the
// body; the body is kept byte for byte, and only the model field's value
// is replaced for a member whose model differs (Request.BodyFor).
func NewMultipartRequest(op Operation, body []byte, contentType string, header http.Header) (*Request, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, fmt.Errorf("%w: the body of %s must be multipart/form-data with a boundary", ErrBadBody, op)
	}
	parts, err := splitMultipart(body, params["boundary"])
	if err != nil {
		return nil, err
	}
	if header == nil {
		header = http.Header{}
	}
	r := &Request{Op: op, Body: body, Header: header, ContentType: contentType}
	seenStream := false
	for _, p := range parts {
		switch {
		case p.name == "model":
			if r.modelSpan.ok() {
				return nil, fmt.Errorf("%w: the form has more than one model field", ErrBadBody)
			}
			r.Model = string(body[p.value.start:p.value.end])
			r.bodyModel, r.modelSpan = r.Model, p.value
		case p.name == "stream":
			if seenStream {
				return nil, fmt.Errorf("%w: the form has more than one stream field", ErrBadBody)
			}
			seenStream = true
			r.Stream = strings.TrimSpace(string(body[p.value.start:p.value.end])) == "true"
		case strings.EqualFold(p.name, "model"), strings.EqualFold(p.name, "stream"):
			// A server that matches names in any case would read it.
			return nil, fmt.Errorf("%w: the form field %q is ambiguous; name it in lower case", ErrBadBody, p.name)
		}
	}
	return r, nil
}

// formPart is one part of a multipart body: its form name and where its
// value sits in the body.
type formPart struct {
	name  string
	value span
}

// splitMultipart finds the parts of a multipart body by its boundary,
// without copying: each part's name (from Content-Disposition) and its
// value's place. Values may be binary; only the delimiters are searched.
//
// The body is forwarded as it came, so it must split the same way for
// every parser upstream. One that parsers may read otherwise is refused
// (ErrBadBody): the boundary anywhere inside a part (RFC 2046 forbids it;
// a part that begins with it is one field here and two to a parser that
// counts the CRLF ending the headers as the delimiter's), a first
// delimiter that does not start a line, anything but white space after
// a delimiter, header lines not ended by CRLF, or two Content-Disposition
// headers in one part.
func splitMultipart(body []byte, boundary string) ([]formPart, error) {
	delim := []byte("--" + boundary)
	i := bytes.Index(body, delim)
	if i < 0 {
		return nil, fmt.Errorf("%w: the multipart body has no boundary line", ErrBadBody)
	}
	if i > 0 && !bytes.HasSuffix(body[:i], []byte("\r\n")) {
		return nil, errMultipartAmbiguous("its first boundary does not start a line")
	}
	var parts []formPart
	pos := i + len(delim)
	for {
		if bytes.HasPrefix(body[pos:], []byte("--")) {
			return parts, nil // the closing delimiter
		}
		// The delimiter line ends with CRLF (transport padding allowed).
		eol := bytes.Index(body[pos:], []byte("\r\n"))
		if eol < 0 {
			return nil, errMultipartCut
		}
		if len(bytes.Trim(body[pos:pos+eol], " \t")) > 0 {
			return nil, errMultipartAmbiguous("a boundary line has more after the boundary")
		}
		start := pos + eol + 2
		headEnd := bytes.Index(body[start:], []byte("\r\n\r\n"))
		if headEnd < 0 {
			return nil, errMultipartCut
		}
		head := body[start : start+headEnd]
		valStart := start + headEnd + 4
		next := bytes.Index(body[valStart:], append([]byte("\r\n"), delim...))
		if next < 0 {
			return nil, errMultipartCut
		}
		valEnd := valStart + next
		if bytes.Contains(body[valStart:valEnd], delim) {
			return nil, errMultipartAmbiguous("a part holds the boundary")
		}
		name, err := partName(head)
		if err != nil {
			return nil, err
		}
		parts = append(parts, formPart{name: name, value: span{start: valStart, end: valEnd}})
		pos = valEnd + 2 + len(delim)
	}
}

var errMultipartCut = fmt.Errorf("%w: the multipart body ends before its closing boundary", ErrBadBody)

func errMultipartAmbiguous(why string) error {
	return fmt.Errorf("%w: the multipart body is ambiguous: %s", ErrBadBody, why)
}

// partName is the form name in a part's headers, "" when it has none.
func partName(head []byte) (string, error) {
	if bytes.ContainsAny(bytes.ReplaceAll(head, []byte("\r\n"), nil), "\r\n") {
		return "", errMultipartAmbiguous("a part's header line does not end with CRLF")
	}
	name, found := "", false
	for _, line := range strings.Split(string(head), "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "Content-Disposition") {
			continue
		}
		if found {
			return "", errMultipartAmbiguous("a part has two Content-Disposition headers")
		}
		found = true
		if _, params, err := mime.ParseMediaType(strings.TrimSpace(v)); err == nil {
			name = params["name"]
		}
	}
	return name, nil
}

// multipartFor returns the body with the model field's value set to
// model: the same bytes around it.
func (r *Request) multipartFor(model string) []byte {
	if !r.modelSpan.ok() || r.bodyModel == model {
		return r.Body
	}
	s := r.modelSpan
	out := make([]byte, 0, len(r.Body)-(s.end-s.start)+len(model))
	out = append(out, r.Body[:s.start]...)
	out = append(out, model...)
	return append(out, r.Body[s.end:]...)
}
