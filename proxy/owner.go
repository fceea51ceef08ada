package proxy

import (
	"net/http"
	"sort"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
)

// Stored objects belong to the caller that made them. The id the gateway
// gives a caller names the backend that holds the object and is signed
// for the caller's tenant (route.Tagger): the key, or its team when the
// team shares objects (teams[].share_objects). A call naming an id the
// caller may not reach (another tenant's, forged, altered, unsigned while
// keys are required) or whose backend does not serve the call's route
// gets the one answer objectNotFound gives, whatever the reason, so that
// nothing tells an object that exists from one that does not. Without
// keys every caller is one tenant and every id is reached, as before ids
// were signed.

// tagger is the route.Tagger of the request's caller: its tenant is the
// key ("k:" and its ID or, for Routes.Keys, its name), or the key's team
// ("t:" and its name) when the team shares objects; Open without keys.
func (x *exchange) tagger() *route.Tagger {
	t := new(route.Tagger)
	x.taggerInto(t)
	return t
}

// taggerInto sets *t to the caller's tagger (see tagger), for a caller
// that keeps it on its stack (route.NewTaggedRequest copies it).
func (x *exchange) taggerInto(t *route.Tagger) {
	*t = route.Tagger{Signer: x.rt.Signer, Index: x.rt.Index}
	switch p := x.lg.who; {
	case p != nil && p.ShareObjects && p.Team != "":
		t.Tenant, t.Readers = "t:"+p.Team, []string{"k:" + p.ID}
	case p != nil:
		t.Tenant = "k:" + p.ID
	case x.lg.key != "":
		t.Tenant = "k:" + x.lg.key
	default:
		t.Open = true
	}
}

// objectNotFound is the answer to an id the caller may not reach, the
// same for every reason (see route.UnknownIDError).
func objectNotFound(id string) *apiError {
	return requestError(http.StatusNotFound, "not_found", "switchover: "+(&route.UnknownIDError{ID: id}).Error())
}

// ownerPools are the pools that have the backend named owner as a
// member, by name: a pool and its aliases once.
func ownerPools(rt *Routes, owner string) []*route.Pool {
	seen := map[*route.Pool]bool{}
	var out []*route.Pool
	for _, p := range rt.Pools {
		if !seen[p] && p.Member(owner) != nil {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// keyMayUse reports whether p may use some pool of rt that has every
// backend of backends as a member, by one of its names: a call on stored
// objects runs on those backends, and a key limited to pools or models
// may run calls only where its pools reach. A nil or unlimited p may use
// any.
func keyMayUse(rt *Routes, p *tenant.Principal, backends []string) bool {
	if p == nil || !p.Restricted() {
		return true
	}
	for name, pool := range rt.Pools {
		if !p.Allows(pool.Name, name) {
			continue
		}
		all := true
		for _, b := range backends {
			if pool.Member(b) == nil {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// poolNotAllowed is the 403 model_not_allowed of a key limited to pools
// that do not reach the backend a call on a stored object runs on.
func poolNotAllowed(p *tenant.Principal, name string) error {
	return keyRefusal(tenant.NotAllowed(p, "pool", name))
}
