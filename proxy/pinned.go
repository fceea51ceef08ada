package proxy

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// Pinned routes the API paths of stored objects (files, batches,
// fine-tuning jobs …) to one backend, or to a pool without failover:
// Pool is a pool of one member, or of the pool's members with one
// attempt. Path is relative to the API root ("files", "messages/batches").
type Pinned struct {
	Path string
	Pool *route.Pool
}

// objectsOp is the operation of a call on a pinned path: any
// OpenAI-format backend serves it, no other. (Anthropic's message batches
// are route.Messages calls with a path.)
const objectsOp route.Operation = "objects"

// apiRelative returns the part of path under the API root, for the forms
// the gateway serves: /v1/…, /openai/v1/… and Azure's /openai/… (its
// api-version dropped later: calls go to the v1 API).
func apiRelative(path string) (string, bool) {
	for _, prefix := range []string{"/openai/v1/", "/v1/", "/openai/"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			return strings.Trim(rest, "/"), true
		}
	}
	return "", false
}

// pinnedFor finds the pinned route of a relative path: the longest Path
// that is the path or a prefix of it at a segment boundary.
func pinnedFor(rt *Routes, rel string) *Pinned {
	var best *Pinned
	for i := range rt.Pinned {
		p := &rt.Pinned[i]
		if rel == p.Path || strings.HasPrefix(rel, p.Path+"/") {
			if best == nil || len(p.Path) > len(best.Path) {
				best = p
			}
		}
	}
	return best
}

// pinnedFormat is the stage that tells Anthropic's message batches,
// answered in its format, from the OpenAI-format objects of the other
// pinned paths.
func pinnedFormat(x *exchange) error {
	x.op = objectsOp
	if x.rel == "messages/batches" || strings.HasPrefix(x.rel, "messages/batches/") {
		x.format, x.op = translate.Anthropic, route.Messages
	}
	return nil
}

// routePinned is the stage that passes a call on a pinned path (or, with
// x.pool the operator's backend for unknown paths, any path) to its
// backend as it is, but for ids: the tagged ids in its path, query and
// JSON body are replaced by the provider's, and they pick the backend
// (the one that made the object) over the route's own choice. Ids of two
// backends get 400; of a backend no route reaches any more, 404.
func routePinned(x *exchange) error {
	r := x.r
	var owner objectOwner
	path, query, err := owner.untagURL(x.rel, r.URL.Query())
	if err != nil {
		return err
	}
	body := x.body
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if len(body) > 0 && (mt == "application/json" || mt == "" && looksJSON(body)) {
		// Passed on as it is, so never with more than one JSON value in
		// it, nor beyond the limits a JSON body keeps to.
		if _, err := route.ScanJSON(body); err != nil {
			return requestError(http.StatusBadRequest, "invalid_json", "switchover: "+err.Error())
		}
	}
	if len(body) > 0 && (mt == "application/json" || mt == "") {
		out, b, err := route.UntagIDs(body)
		if err != nil {
			return requestError(http.StatusBadRequest, "owners_conflict", "switchover: "+err.Error())
		}
		if b != "" {
			if err := owner.note(b); err != nil {
				return err
			}
		}
		body = out
	}
	pool := x.pool
	if owner != "" && pool.Member(string(owner)) == nil {
		if pool = pinnedOwnerPool(x.rt, string(owner)); pool == nil {
			return requestError(http.StatusNotFound, "not_found",
				fmt.Sprintf("switchover: the object was made by backend %s, which no route of this gateway reaches any more", owner))
		}
	}
	req := &route.Request{Op: x.op, Format: x.format, Body: body, Header: r.Header, Owner: string(owner),
		Method: r.Method, Path: path, RawQuery: query}
	if len(body) > 0 && mt != "application/json" {
		req.ContentType = ct
	}
	x.routeTo(pool, req)
	return nil
}

// objectOwner is the backend that the tagged ids of a call name, found as
// they are untagged; "" until one is.
type objectOwner string

// untagURL returns the path rel and query q of a call with their tagged
// ids untagged (in the query, list cursors: after, before), escaped, and
// api-version dropped from the query: calls go to the v1 API.
func (o *objectOwner) untagURL(rel string, q url.Values) (path, rawQuery string, err error) {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		if s, err = o.untag(s); err != nil {
			return "", "", err
		}
		segs[i] = url.PathEscape(s)
	}
	q.Del("api-version")
	for k, vs := range q {
		for i, v := range vs {
			if vs[i], err = o.untag(v); err != nil {
				return "", "", err
			}
		}
		q[k] = vs
	}
	return strings.Join(segs, "/"), q.Encode(), nil
}

// untag returns id without its tag, noting the backend the tag names; an
// id that is not tagged is returned as it is.
func (o *objectOwner) untag(id string) (string, error) {
	b, orig, ok := route.UntagID(id)
	if !ok {
		return id, nil
	}
	return orig, o.note(b)
}

// note notes backend b as the owner: an error if another was noted.
func (o *objectOwner) note(b string) error {
	if *o != "" && string(*o) != b {
		return requestError(http.StatusBadRequest, "owners_conflict",
			fmt.Sprintf("switchover: the request names objects held by two backends, %s and %s; no one backend can answer it", *o, b))
	}
	*o = objectOwner(b)
	return nil
}

// pinnedOwnerPool is a pinned route's pool, else any pool, that has the
// backend named owner, or nil.
func pinnedOwnerPool(rt *Routes, owner string) *route.Pool {
	for _, p := range rt.Pinned {
		if p.Pool.Member(owner) != nil {
			return p.Pool
		}
	}
	if rt.Unknown != nil && rt.Unknown.Member(owner) != nil {
		return rt.Unknown
	}
	return ownerPool(rt, owner)
}

// looksJSON reports whether body, sent without a media type, begins as a
// JSON object or array does.
func looksJSON(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}
