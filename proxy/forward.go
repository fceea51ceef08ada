package proxy

import (
	"fmt"
	"net/http"
	"strings"
)

// What unknown_paths forwards (Routes.Unknown, Routes.UnknownAllow): the
// paths nothing else routes that the operator listed, never the ones
// below unless listed by name.

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
// path that differs only in case from one the gateway routes or pins (a
// backend that ignores case would serve it past the router), 404 for one
// UnknownAllow does not list, or that neverForwarded holds back.
func (rt *Routes) forwards(path, rel string) error {
	if k, _, _, _ := classify(strings.ToLower(path)); k != pathUnknown || pinnedFold(rt, rel) {
		return requestError(http.StatusBadRequest, "invalid_path",
			"switchover: the path differs only in case from one the gateway routes itself; paths are case-sensitive")
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
