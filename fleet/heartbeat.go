package fleet

import (
	"context"
	"encoding/json"
	"time"
)

// beat renews the replica's heartbeat and its notification lease,
// publishes the failovers it counted and counts again the failures whose
// count went unheard, every Heartbeat.
func (r *Replica) beat(ctx context.Context) {
	for {
		r.heartbeat(ctx)
		if !r.sleep(ctx, r.o.Heartbeat) {
			return
		}
	}
}

func (r *Replica) heartbeat(ctx context.Context) {
	now := r.clk.Now()
	hb, _ := json.Marshal(ReplicaStatus{ID: r.id, Version: r.o.Version, Started: r.started, Seen: now, InFlight: r.host.InFlight()})
	r.call(ctx, func(c context.Context) error { return r.store.Put(c, keyReplica+r.id, hb, replicaTTL) })
	var lead bool
	if r.call(ctx, func(c context.Context) error {
		var err error
		lead, err = r.store.Acquire(c, keyLeader, r.id, leaderTTL)
		return err
	}) == nil {
		r.leader.Store(lead)
	}
	r.mu.Lock()
	counts := r.failovers
	r.failovers = map[string]int{}
	r.mu.Unlock()
	for pool, n := range counts {
		r.send(Message{Kind: kindFailovers, Pool: pool, N: n, At: now})
	}
	r.flushQuota(now, true)
	if r.up.Load() {
		r.recount(now)
	}
	if r.up.Load() && r.PendingActions() > 0 {
		// Operator actions taken while the store was out, or whose
		// publication failed.
		r.enqueue(r.flushActions)
	}
}

// Failover counts a failover in pool, published with the next heartbeat.
func (r *Replica) Failover(pool string) {
	r.mu.Lock()
	r.failovers[pool]++
	r.mu.Unlock()
}

// ReplicaStatus is one replica as its heartbeat shows it.
type ReplicaStatus struct {
	ID       string         `json:"id"`
	Version  string         `json:"version,omitempty"`
	Started  time.Time      `json:"started"`
	Seen     time.Time      `json:"last_seen"`
	InFlight map[string]int `json:"in_flight,omitempty"`
}

// Replicas returns the replicas whose heartbeat is recent, or an error
// when the store does not answer in time.
func (r *Replica) Replicas(ctx context.Context) ([]ReplicaStatus, error) {
	var kept map[string][]byte
	if err := r.call(ctx, func(c context.Context) error {
		var err error
		kept, err = r.store.List(c, keyReplica)
		return err
	}); err != nil {
		return nil, err
	}
	var out []ReplicaStatus
	for _, v := range kept {
		var s ReplicaStatus
		if json.Unmarshal(v, &s) == nil {
			out = append(out, s)
		}
	}
	return out, nil
}
