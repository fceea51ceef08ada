package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
	"github.com/switchover-gw/switchover/translate"
)

// storedChats is the path, relative to the API root, under which stored
// chat completions are called on: chat/completions/{id} and
// chat/completions/{id}/messages.
const storedChats = "chat/completions/"

// objectMethod is the method a call on a stored response or chat
// completion takes: the request's own when the path allows it, else the
// allowed ones (for the Allow header of a 405).
func objectMethod(path, method string) string {
	_, sub := splitObjectPath(path)
	allowed := "GET, DELETE"
	switch {
	case sub == "/cancel":
		allowed = http.MethodPost
	case sub == "/input_items", sub == "/messages":
		allowed = http.MethodGet
	case strings.HasPrefix(path, storedChats):
		allowed = "GET, POST, DELETE" // POST updates its metadata
	}
	for _, m := range strings.Split(allowed, ", ") {
		if m == method {
			return method
		}
	}
	return allowed
}

// splitObjectPath splits "responses/{id}/cancel" into the id and
// "/cancel", and "chat/completions/{id}/messages" into the id and
// "/messages".
func splitObjectPath(path string) (id, sub string) {
	rest, ok := strings.CutPrefix(path, storedChats)
	if !ok {
		rest = strings.TrimPrefix(path, "responses/")
	}
	id, after, found := strings.Cut(rest, "/")
	if found {
		sub = "/" + after
	}
	return id, sub
}

// objectSubs are the paths below a stored object's id that are routed,
// by the collection it is in ("" is the object itself).
var objectSubs = map[route.Operation][]string{
	route.Responses:       {"", "/cancel", "/input_items"},
	route.ChatCompletions: {"", "/messages"},
}

// objectBody is the stage that reads the body of a call on a stored
// object that takes one (POST chat/completions/{id}: the metadata), and
// leaves the others' unread (ignoreBody).
func objectBody(x *exchange) error {
	if x.op == route.ChatCompletions && x.r.Method == http.MethodPost {
		return readRequestBody(x)
	}
	return ignoreBody(x)
}

// routeObject is the stage that routes a call on a stored response (GET
// or DELETE responses/{id}, POST responses/{id}/cancel, GET
// responses/{id}/input_items) or a stored chat completion (GET, POST or
// DELETE chat/completions/{id}, GET chat/completions/{id}/messages) to
// the backend that made it, which the id names (see route.Tagger); no
// other backend has it. An id the caller may not reach, or whose backend
// no pool has any more, gets 404 (objectNotFound); one whose backend is
// only in pools the caller's key may not use, 403 model_not_allowed.
func routeObject(x *exchange) error {
	r := x.r
	objID, sub := splitObjectPath(x.rel)
	if !slices.Contains(objectSubs[x.op], sub) {
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
	collection, format, query := "responses/", translate.Responses, r.URL.RawQuery
	if x.op == route.ChatCompletions {
		collection, format = storedChats, translate.OpenAI
		if query, err = chatQuery(tg, r.URL.Query(), owner); err != nil {
			return err
		}
	}
	req := &route.Request{Op: x.op, Format: format, Header: r.Header, Owner: owner, Tagger: tg,
		Method: r.Method, Path: collection + orig + sub, RawQuery: query}
	if len(x.body) > 0 {
		req.Body = x.body
	}
	x.routeTo(pool, req)
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

// storedChatListRefused is the answer to GET chat/completions, the list
// of stored chat completions: 404 list_not_supported. The provider's
// list names every chat its API key stored, whoever made it through the
// gateway, and the gateway keeps no record of whose they are; each stored
// chat is reached by the id its maker was given.
func storedChatListRefused() error {
	return requestError(http.StatusNotFound, "list_not_supported",
		"switchover: the gateway does not list stored chat completions (GET chat/completions): the provider's list would name other callers' chats; "+
			"keep the ids your chats with store: true return, and call GET chat/completions/{id} or chat/completions/{id}/messages")
}

// chatQuery is the query a call on a stored chat completion sends its
// owner: without api-version (the call goes to the v1 API), and with the
// ids in it (messages' after=, which the gateway gave tagged) untagged.
// An id the caller may not reach, or held by another backend than owner,
// gets objectNotFound.
func chatQuery(tg *route.Tagger, q url.Values, owner string) (string, error) {
	q.Del("api-version")
	for k, vs := range q {
		for i, v := range vs {
			b, orig, tagged, err := tg.Untag(v)
			if err != nil || tagged && b != owner {
				return "", objectNotFound(v)
			}
			vs[i] = orig
		}
		q[k] = vs
	}
	return q.Encode(), nil
}
