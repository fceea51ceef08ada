package proxy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/switchover-gw/switchover/route"
)

// What unknown_paths forwards (Routes.Unknown, Routes.UnknownAllow): the
// paths nothing else routes that the operator listed, never the ones
// below unless listed by name, and only for keys whose scope allows it.

// neverForwarded are the paths Unknown takes only when an entry of
// UnknownAllow names them or a path under them ("*" does not): calls
// that reach beyond one tenant's use of a model. A prefix with anyName
// matches every path whose name starts with it ("admin_api_keys"), the
// others whole segments. Matched in any case.
var neverForwarded = [...]struct {
	prefix  string
	anyName bool
	why     string
}{
	{"organization", true, "the provider's organisation and admin APIs"},
	{"admin", true, "the provider's organisation and admin APIs"},
	{"dashboard", true, "the provider's account pages"},
	{"realtime", false, "realtime client secrets, sessions and calls (tokens usable outside the gateway)"},
	{"chat/completions", false, "stored chat completions (every tenant's)"},
}

// refusedFor returns the entry of neverForwarded that rel (relative to
// the API root) falls under, or "" and false.
func refusedFor(rel string) (why string, ok bool) {
	rel = strings.ToLower(rel)
	for _, n := range neverForwarded {
		if n.anyName && strings.HasPrefix(rel, n.prefix) || under(rel, n.prefix) {
			return n.why, true
		}
	}
	return "", false
}

// under reports whether rel is prefix or a path under it.
func under(rel, prefix string) bool {
	return rel == prefix || strings.HasPrefix(rel, prefix+"/")
}

// forwards returns nil when Unknown takes path (normalised; rel is it
// relative to the API root), else the error that answers it: 400 for a
// path that shadows one the gateway routes or pins (shadows), 404 for
// one UnknownAllow does not list, or that neverForwarded holds back.
func (rt *Routes) forwards(path, rel string) error {
	if rt.shadows(path, rel) {
		return requestError(http.StatusBadRequest, "invalid_path",
			"switchover: the path differs only in case or API root from one the gateway routes itself; paths are case-sensitive")
	}
	why, refused := refusedFor(rel)
	for _, a := range rt.UnknownAllow {
		if a == "*" && !refused {
			return nil
		}
		if a != "*" && under(rel, a) {
			if _, named := refusedFor(a); !refused || named {
				return nil
			}
		}
	}
	msg := "unknown_paths.paths does not list it"
	if refused {
		msg = "unknown_paths forwards " + why + " only when its paths name them"
	}
	return requestError(http.StatusNotFound, "not_found", fmt.Sprintf("switchover: no route for %s; %s", truncate(path, 200), msg))
}

// shadows reports whether path (rel under the API root) is, in any case
// or under another root the gateway serves ("/v1/openai/v1/…",
// "/v1/deployments/{d}/…"), a path the gateway routes or pins: a backend
// that ignores case, or resolves the root again, would serve it past the
// router.
func (rt *Routes) shadows(path, rel string) bool {
	for _, p := range [...]string{path, "/" + rel, "/openai/" + rel} {
		if k, _, _, _ := classify(strings.ToLower(p)); k != pathUnknown {
			return true
		}
	}
	return pinnedFold(rt, rel)
}

// pinnedFold reports whether rel is, in any case, a pinned path or under
// one.
func pinnedFold(rt *Routes, rel string) bool {
	rel = strings.ToLower(rel)
	for _, p := range rt.Pinned {
		if under(rel, strings.ToLower(p.Path)) {
			return true
		}
	}
	return false
}

// scopeForwarded is the stage that holds a key limited to some pools or
// models to them on a path unknown_paths takes (x.pool is Routes.Unknown;
// other pinned paths pass). Its backend gets the body as the caller sent
// it, model and all, which the gateway does not read: a key limited to
// models may not use such paths, and a key limited to pools only when one
// of its pools has every backend of the route (the unknown_paths
// backend). Other keys, and callers without a key, may. A refusal gets
// 403 path_not_allowed, before the body is read.
func scopeForwarded(x *exchange) error {
	p := x.lg.who
	if x.pool != x.rt.Unknown || p == nil || len(p.Pools) == 0 && len(p.Models) == 0 {
		return nil
	}
	if len(p.Models) == 0 {
		for _, name := range p.Pools {
			if pool := x.rt.Pools[name]; pool != nil && holdsAll(pool, x.pool) {
				return nil
			}
		}
	}
	return requestError(http.StatusForbidden, "path_not_allowed",
		fmt.Sprintf("switchover: key %s may use only its pools or models, and no pool of its own has the backend that takes this path", p.ID)).
		with("X-Should-Retry", "false")
}

// holdsAll reports whether every backend of route is a member of pool.
func holdsAll(pool, route *route.Pool) bool {
	for _, m := range route.Members {
		if pool.Member(m.Backend.Name) == nil {
			return false
		}
	}
	return len(route.Members) > 0
}

// checkUpstreamPath is the stage that refuses, with 400, a call on a
// stored object (pinned, forwarded, a stored response) whose path, as it
// goes upstream with its ids untagged, is not plain: an id whose tag
// hides a dot segment, an empty one or an escape would otherwise reach
// the backend as one.
func checkUpstreamPath(x *exchange) error {
	if x.req == nil || x.req.Path == "" {
		return nil
	}
	up := "/" + x.req.Path
	if p, err := normalisePath(up); err != nil || strings.Count(p, "/") != strings.Count(up, "/") {
		return pathRefused("an id in the path is not plain")
	}
	return nil
}
