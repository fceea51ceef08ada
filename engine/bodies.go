package engine

import (
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/proxy"
)

// bodyRoutes are the request log's body settings for the pipeline
// (proxy.Routes.Bodies): the request_log sections of the pools and keys.
// Nil when none of them says anything, or without a store to keep the
// bodies in: then no call pays for a capture.
func bodyRoutes(cfg *config.Config) *proxy.BodyRoutes {
	if cfg.Store == nil {
		return nil
	}
	br := &proxy.BodyRoutes{Pools: map[string]proxy.BodyPolicy{}, Keys: map[string]proxy.BodyPolicy{}}
	on := false
	for _, pc := range cfg.Pools {
		if l := pc.RequestLog; l != nil {
			br.Pools[pc.Name] = bodyPolicy(l)
			on = on || l.BodiesOn()
		}
	}
	for _, k := range cfg.Keys {
		if l := k.RequestLog; l != nil {
			br.Keys[k.Name] = bodyPolicy(l)
			on = on || l.BodiesOn()
		}
	}
	if !on {
		return nil
	}
	return br
}

func bodyPolicy(l *config.RequestLog) proxy.BodyPolicy {
	return proxy.BodyPolicy{Bodies: l.Bodies, MaxBytes: int64(l.MaxBodyBytes)}
}
