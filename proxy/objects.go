package proxy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
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
// names (see route.Tagger); no other backend has it. An id the caller may
// not reach, or whose backend no pool has any more, gets 404
// (objectNotFound); one whose backend is only in pools the caller's key
// may not use, 403 model_not_allowed.
func routeObject(x *exchange) error {
	r := x.r
	objID, sub := splitObjectPath(x.rel)
	if sub != "" && sub != "/cancel" && sub != "/input_items" {
		return requestError(http.StatusNotFound, "not_found", fmt.Sprintf("switchover: no route for %s %s", r.Method, truncate(r.URL.Path, 200)))
	}
	tg := x.tagger()
	owner, orig, tagged, err := tg.Untag(objID)
	if err != nil || !tagged {
		return objectNotFound(objID)
	}
	pool, err := objectPool(x, objID, owner)
	if err != nil {
		return err
	}
	x.routeTo(pool, &route.Request{Op: route.Responses, Format: translate.Responses, Header: r.Header, Owner: owner, Tagger: tg,
		Method: r.Method, Path: "responses/" + orig + sub, RawQuery: r.URL.RawQuery})
	return nil
}

// objectPool is the pool a call on a stored response made by backend
// owner goes through: the first by name that has owner as a member and
// that the caller's key may use (by one of its names). None has it:
// objectNotFound; none the key may use: 403.
func objectPool(x *exchange, id, owner string) (*route.Pool, error) {
	pools := ownerPools(x.rt, owner)
	if len(pools) == 0 {
		return nil, objectNotFound(id)
	}
	p := x.lg.who
	for _, pool := range pools {
		if p == nil || keyMayUseAlias(x.rt, p, pool) {
			return pool, nil
		}
	}
	return nil, poolNotAllowed(p, pools[0].Name)
}

// keyMayUseAlias reports whether p may use pool by one of its names in rt.
func keyMayUseAlias(rt *Routes, p *tenant.Principal, pool *route.Pool) bool {
	for name, q := range rt.Pools {
		if q == pool && p.Allows(pool.Name, name) {
			return true
		}
	}
	return false
}
