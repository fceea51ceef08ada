package proxy

import (
	"github.com/switchover-gw/switchover/route"
)

// Conversations (OpenAI's Conversations API: conversations,
// conversations/{id}, …/{id}/items, …/{id}/items/{item_id}) live on the
// backend that makes them, like stored responses, and their create names
// no model. A pinned route that takes their path decides where they go,
// as for any pinned path. Without one they take Routes.Conversations: a
// create goes to the first of those pools the caller's key may use, on
// a member the pool's selection picks (one attempt: a create is never
// sent twice, but a member in the sin bin is passed over), and its id
// names that member; every later call goes to the member the id names,
// through the first of those pools that has it and that the key may use
// (503 owner_unavailable while it is down, as for other stored objects).

// conversationRoute reports whether rel, a path under the API root that
// no pinned route takes, is the Conversations API's and rt has pools to
// route it; if so x goes the pinned way, its pool chosen later
// (conversationPool), once the call's ids are read.
func conversationRoute(x *exchange, rel string) bool {
	if !under(rel, "conversations") || len(x.rt.Conversations) == 0 {
		return false
	}
	x.kind, x.pool, x.rel, x.conv = pathPinned, x.rt.Conversations[0], rel, true
	return true
}

// conversationPool is the pool of Routes.Conversations a conversations
// call goes through, o being what its ids say: for a call that names a
// conversation, the first pool that has the backend its id names and
// that the caller's key may use; for one that names none (a create), the
// first the key may use. No pool has the backend: objectNotFound; none
// the key may use: 403 model_not_allowed.
func conversationPool(x *exchange, o *objectOwner) (*route.Pool, error) {
	p := x.lg.who
	var first *route.Pool
	for _, pool := range x.rt.Conversations {
		if o.backend != "" && pool.Member(o.backend) == nil {
			continue
		}
		if first == nil {
			first = pool
		}
		if p == nil || keyMayUseAlias(x.rt, p, x.rt.Pools[pool.Name]) {
			return pool, nil
		}
	}
	if first == nil {
		return nil, objectNotFound(o.id)
	}
	return nil, poolNotAllowed(p, first.Name)
}
