package proxy

import (
	"bytes"
	"errors"
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
// JSON body are checked for the caller (route.Tagger) and replaced by
// the provider's, and they pick the backend (the one that made the
// object) among the route's. Ids of two backends get 400; an id the
// caller may not reach, or whose backend is not one of the route's, 404
// (objectNotFound); with a key, a call that names no object must be a
// collection's (create or list: the list is filtered, see
// route.Tagger.List), and the key's pools must reach the backend the call
// runs on (403 model_not_allowed); admit checks the models of a batch.
func routePinned(x *exchange) error {
	r := x.r
	owner := objectOwner{tagger: x.tagger()}
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
		out, b, id, err := owner.tagger.UntagBody(body)
		if err != nil {
			return owner.refusal(err)
		}
		if err := owner.note(b); err != nil {
			return err
		}
		if owner.id == "" {
			owner.id = id
		}
		body = out
	}
	if x.conv {
		if x.pool, err = conversationPool(x, &owner); err != nil {
			return err
		}
	}
	if err := owner.check(x); err != nil {
		return err
	}
	if r.Method == http.MethodPost && (mt == "application/json" || mt == "") && marksOwner(x.rel) {
		body = owner.tagger.Mark(body)
	}
	// A GET whose path names no object lists a collection, whatever its
	// cursor (after=) names: the answer is filtered.
	owner.tagger.List = r.Method == http.MethodGet && !owner.inPath
	owner.tagger.Made, owner.tagger.Deletes = owner.indexes(r.Method, x.rel)
	req := &route.Request{Op: x.op, Format: x.format, Body: body, Header: r.Header, Owner: owner.backend, Tagger: owner.tagger,
		Method: r.Method, Path: path, RawQuery: query}
	if len(body) > 0 && mt != "application/json" {
		req.ContentType = ct
	}
	x.routeTo(x.pool, req)
	return nil
}

// objectOwner is what the tagged ids of a call say: the backend they
// name, found as they are untagged ("" until one is), checked by the
// caller's tagger.
type objectOwner struct {
	tagger  *route.Tagger
	backend string
	id      string // the first tagged id, for a 404's message
	inPath  bool   // the path names an object: the call is not a list
	pathID  string // the provider's id of the object the path names
}

// untagURL returns the path rel and query q of a call with their tagged
// ids untagged (in the query, list cursors: after, before), escaped, and
// api-version dropped from the query: calls go to the v1 API.
func (o *objectOwner) untagURL(rel string, q url.Values) (path, rawQuery string, err error) {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		if s, err = o.untag(s); err != nil {
			return "", "", err
		}
		if o.backend != "" && !o.inPath {
			o.inPath, o.pathID = true, s
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
// id that is not tagged is returned as it is, but for a provider's id of
// a stored object while keys are required (see route.Tagger.UntagRef).
func (o *objectOwner) untag(id string) (string, error) {
	b, orig, tagged, err := o.tagger.UntagRef(id)
	if err != nil {
		return "", o.refusal(err)
	}
	if !tagged {
		return id, nil
	}
	if o.id == "" {
		o.id = id
	}
	return orig, o.note(b)
}

// refusal is the answer to err, an error of untagging.
func (o *objectOwner) refusal(err error) error {
	var unknown *route.UnknownIDError
	var conflict *route.OwnerConflictError
	switch {
	case errors.As(err, &unknown):
		return objectNotFound(unknown.ID)
	case errors.As(err, &conflict):
		return o.note2(conflict.First, conflict.Second)
	}
	return requestError(http.StatusBadRequest, "invalid_request", "switchover: "+err.Error())
}

// note notes backend b as the owner: an error if another was noted.
func (o *objectOwner) note(b string) error {
	if b == "" {
		return nil
	}
	if o.backend != "" && o.backend != b {
		return o.note2(o.backend, b)
	}
	o.backend = b
	return nil
}

func (o *objectOwner) note2(first, second string) error {
	return requestError(http.StatusBadRequest, "owners_conflict",
		fmt.Sprintf("switchover: the request names objects held by two backends, %s and %s; no one backend can answer it", first, second))
}

// check decides whether the call may go to its route, x.pool: the owner
// it names must be one of the route's backends (an id naming another
// gets 404, as one that does not exist); with a key, a call that names no
// object must be on a collection, and the key's pools must reach the
// backends the call may run on.
func (o *objectOwner) check(x *exchange) error {
	pool := x.pool
	if o.backend != "" && pool.Member(o.backend) == nil {
		return objectNotFound(o.id)
	}
	if o.tagger.Open {
		return nil
	}
	if o.backend == "" && pool != x.rt.Unknown && !isCollection(x.rt, x.rel) {
		id := x.rel
		if p := pinnedFor(x.rt, x.rel); p != nil {
			id = strings.TrimPrefix(strings.TrimPrefix(x.rel, p.Path), "/")
		}
		return objectNotFound(id)
	}
	backends := []string{o.backend}
	if o.backend == "" {
		backends = backends[:0]
		for _, m := range pool.Members {
			backends = append(backends, m.Backend.Name)
		}
	}
	if p := x.lg.who; !keyMayUse(x.rt, p, backends) {
		return poolNotAllowed(p, pool.Name)
	}
	return nil
}

// collections are the API paths of the collections of stored objects:
// a call on one names no object (it creates one, or lists them).
var collections = map[string]bool{"files": true, "uploads": true, "batches": true, "vector_stores": true,
	"fine_tuning/jobs": true, "containers": true, "conversations": true, "messages/batches": true}

// marked are the collections whose objects have metadata, where the
// gateway writes the owner's mark as it makes them (route.Tagger.Mark),
// so that their lists show a key its own.
var marked = map[string]bool{"batches": true, "vector_stores": true, "fine_tuning/jobs": true}

// indexed are the collections whose objects have no metadata: the
// gateway records who made them in its owner index
// (route.Tagger.Index), so that their lists show a key its own.
var indexed = map[string]bool{"files": true, "uploads": true, "containers": true, "messages/batches": true}

// indexes returns what a call with method on rel tells the owner index:
// made, when it makes an object of an indexed collection (a POST to it,
// or an upload's completion, which makes a file); deletes, the
// provider's id of the indexed object it deletes ("" for none).
func (o *objectOwner) indexes(method, rel string) (made bool, deletes string) {
	parent, _, _ := strings.Cut(rel, "/")
	switch {
	case method == http.MethodPost && indexed[rel]:
		return true, ""
	case method == http.MethodPost && parent == "uploads" && strings.HasSuffix(rel, "/complete"):
		return true, ""
	case method == http.MethodDelete && o.pathID != "":
		if coll, id, ok := strings.Cut(rel, "/"+o.id); ok && id == "" && indexed[coll] {
			return false, o.pathID
		}
	}
	return false, ""
}

// marksOwner reports whether a POST to rel makes an object of a marked
// collection, or modifies a vector store (its metadata is replaced
// whole).
func marksOwner(rel string) bool {
	if marked[rel] {
		return true
	}
	parent, id, ok := strings.Cut(rel, "/")
	return ok && parent == "vector_stores" && id != "" && !strings.Contains(id, "/")
}

// isCollection reports whether rel is a collection's path, or its pinned
// route's own path.
func isCollection(rt *Routes, rel string) bool {
	if collections[rel] {
		return true
	}
	p := pinnedFor(rt, rel)
	return p != nil && p.Path == rel
}

// looksJSON reports whether body, sent without a media type, begins as a
// JSON object or array does.
func looksJSON(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}
