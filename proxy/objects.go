package proxy

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

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

// routeObject is the stage that routes a call on a stored response (GET
// or DELETE responses/{id}, POST responses/{id}/cancel, GET
// responses/{id}/input_items) to the backend that made it, which the id
// names (see route.TagID); no other backend has it. An id the gateway did
// not return, or whose backend is gone, gets 404.
func routeObject(x *exchange) error {
	r := x.r
	objID, sub := splitObjectPath(x.rel)
	if sub != "" && sub != "/cancel" && sub != "/input_items" {
		return requestError(http.StatusNotFound, "not_found", fmt.Sprintf("switchover: no route for %s %s", r.Method, truncate(r.URL.Path, 200)))
	}
	owner, orig, ok := route.UntagID(objID)
	if !ok {
		return requestError(http.StatusNotFound, "response_not_found",
			fmt.Sprintf("switchover: %q is not a response id this gateway returned: the ids it returns name the backend that holds the response", truncate(objID, 100)))
	}
	pool := ownerPool(x.rt, owner)
	if pool == nil {
		return requestError(http.StatusNotFound, "response_not_found",
			fmt.Sprintf("switchover: the response %q was made by backend %s, which is not in this gateway's configuration any more", truncate(objID, 100), owner))
	}
	x.routeTo(pool, &route.Request{Op: route.Responses, Format: translate.Responses, Header: r.Header, Owner: owner,
		Method: r.Method, Path: "responses/" + orig + sub, RawQuery: r.URL.RawQuery})
	return nil
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
