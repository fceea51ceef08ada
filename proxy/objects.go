package proxy

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// objectMethod is the method a call on a stored response takes: the
// request's own when the path allows it, else the allowed ones (for the
// Allow header of a 405).
func objectMethod(path, method string) string {
	_, sub := splitObjectPath(path)
	allowed := "GET, DELETE"
	switch sub {
	case "/cancel":
		allowed = http.MethodPost
	case "/input_items":
		allowed = http.MethodGet
	}
	for _, m := range strings.Split(allowed, ", ") {
		if m == method {
			return method
		}
	}
	return allowed
}

// splitObjectPath splits "responses/{id}/cancel" into the id and "/cancel".
func splitObjectPath(path string) (id, sub string) {
	rest := strings.TrimPrefix(path, "responses/")
	id, after, found := strings.Cut(rest, "/")
	if found {
		sub = "/" + after
	}
	return id, sub
}

// serveObject answers a call on a stored response (GET or DELETE
// responses/{id}, POST responses/{id}/cancel, GET
// responses/{id}/input_items) from the backend that made it, which the
// id names (see route.TagID); no other backend has it.
func (h *Handler) serveObject(w http.ResponseWriter, r *http.Request, rt *Routes, path string, who caller, id string) {
	start := time.Now()
	lg := &logLine{id: id, key: who.name, who: who.p, method: r.Method, path: r.URL.Path}
	defer func() { h.finish(lg, start) }()
	fail := func(status int, code, msg string) {
		lg.status = status
		writeErrorAs(w, translate.OpenAI, status, "invalid_request_error", code, msg)
	}
	objID, sub := splitObjectPath(path)
	if sub != "" && sub != "/cancel" && sub != "/input_items" {
		fail(http.StatusNotFound, "not_found", fmt.Sprintf("switchover: no route for %s %s", r.Method, truncate(r.URL.Path, 200)))
		return
	}
	owner, orig, ok := route.UntagID(objID)
	if !ok {
		fail(http.StatusNotFound, "response_not_found", fmt.Sprintf("switchover: %q is not a response id this gateway returned: the ids it returns name the backend that holds the response", truncate(objID, 100)))
		return
	}
	pool := ownerPool(rt, owner)
	if pool == nil {
		fail(http.StatusNotFound, "response_not_found", fmt.Sprintf("switchover: the response %q was made by backend %s, which is not in this gateway's configuration any more", truncate(objID, 100), owner))
		return
	}
	req := &route.Request{Op: route.Responses, Format: translate.Responses, Header: r.Header, Owner: owner,
		Method: r.Method, Path: "responses/" + orig + sub, RawQuery: r.URL.RawQuery}
	h.run(w, r, lg, pool, req, translate.Responses, id, start)
}

// ownerPool is a pool that has the backend named owner as a member, the
// first by name, or nil.
func ownerPool(rt *Routes, owner string) *route.Pool {
	names := make([]string, 0, len(rt.Pools))
	for name := range rt.Pools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if p := rt.Pools[name]; p.Member(owner) != nil {
			return p
		}
	}
	return nil
}
