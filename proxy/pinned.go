package proxy

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

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

// servePinned passes a call on a pinned path (or, with pool the
// operator's backend for unknown paths, any path) to its backend as it
// is, but for ids: the tagged ids in its path, query and JSON body are
// replaced by the provider's, and they pick the backend (the one that
// made the object) over the route's own choice.
func (h *Handler) servePinned(w http.ResponseWriter, r *http.Request, rt *Routes, pool *route.Pool, rel string, who caller, id string) {
	start := time.Now()
	format := translate.OpenAI
	op := objectsOp
	if rel == "messages/batches" || strings.HasPrefix(rel, "messages/batches/") {
		format, op = translate.Anthropic, route.Messages
	}
	lg := &logLine{id: id, key: who.name, who: who.p, method: r.Method, path: r.URL.Path}
	defer func() { h.finish(lg, start) }()
	fail := func(status int, code, msg string) {
		lg.status = status
		writeErrorAs(w, format, status, "invalid_request_error", code, msg)
	}

	body, res, ok := h.readRequestBody(w, r, rt, lg, format, start)
	defer res.close()
	if !ok {
		return
	}
	owner := ""
	note := func(b string) bool {
		if owner != "" && owner != b {
			fail(http.StatusBadRequest, "owners_conflict", fmt.Sprintf("switchover: the request names objects held by two backends, %s and %s; no one backend can answer it", owner, b))
			return false
		}
		owner = b
		return true
	}
	// Ids in the path.
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		if b, orig, ok := route.UntagID(s); ok {
			if !note(b) {
				return
			}
			segs[i] = url.PathEscape(orig)
		} else {
			segs[i] = url.PathEscape(s)
		}
	}
	// Ids in the query (list cursors: after, before).
	q := r.URL.Query()
	q.Del("api-version") // calls go to the v1 API
	for k, vs := range q {
		for i, v := range vs {
			if b, orig, ok := route.UntagID(v); ok {
				if !note(b) {
					return
				}
				vs[i] = orig
			}
		}
		q[k] = vs
	}
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if len(body) > 0 && (mt == "application/json" || mt == "") {
		out, b, err := route.UntagIDs(body)
		if err != nil {
			fail(http.StatusBadRequest, "owners_conflict", "switchover: "+err.Error())
			return
		}
		if b != "" && !note(b) {
			return
		}
		body = out
	}
	if owner != "" && pool.Member(owner) == nil {
		pool = pinnedOwnerPool(rt, owner)
		if pool == nil {
			fail(http.StatusNotFound, "not_found", fmt.Sprintf("switchover: the object was made by backend %s, which no route of this gateway reaches any more", owner))
			return
		}
	}
	req := &route.Request{Op: op, Format: format, Body: body, Header: r.Header, Owner: owner,
		Method: r.Method, Path: strings.Join(segs, "/"), RawQuery: q.Encode()}
	if len(body) > 0 && mt != "application/json" {
		req.ContentType = ct
	}
	h.run(w, r, lg, pool, req, format, id, start)
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
