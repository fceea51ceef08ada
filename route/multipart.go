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
	for _, p := range parts {
		switch p.name {
		case "model":
			if r.modelSpan.ok() {
				return nil, fmt.Errorf("%w: the form has more than one model field", ErrBadBody)
			}
			r.Model = string(body[p.value.start:p.value.end])
			r.bodyModel, r.modelSpan = r.Model, p.value
		case "stream":
			r.Stream = strings.TrimSpace(string(body[p.value.start:p.value.end])) == "true"
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
func splitMultipart(body []byte, boundary string) ([]formPart, error) {
	delim := []byte("--" + boundary)
	i := bytes.Index(body, delim)
	if i < 0 {
		return nil, fmt.Errorf("%w: the multipart body has no boundary line", ErrBadBody)
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
		parts = append(parts, formPart{name: partName(head), value: span{start: valStart, end: valEnd}})
		pos = valEnd + 2 + len(delim)
	}
}

var errMultipartCut = fmt.Errorf("%w: the multipart body ends before its closing boundary", ErrBadBody)

// partName is the form name in a part's headers, "" when it has none.
func partName(head []byte) string {
	for _, line := range strings.Split(string(head), "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "Content-Disposition") {
			continue
		}
		if _, params, err := mime.ParseMediaType(strings.TrimSpace(v)); err == nil {
			return params["name"]
		}
	}
	return ""
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
