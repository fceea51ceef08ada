package sim

import (
	"crypto/subtle"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// deployment is the live state of one simulated deployment. It is safe for
// concurrent use.
type deployment struct {
	sim         *Sim
	cfg         Deployment // with defaults
	schedule    []ScheduledFault
	quota       *limiter
	counters    counters
	fingerprint string
	tag         string   // see idTag
	objects     *objects // stored responses, files and batches

	rngMu sync.Mutex
	rng   *rand.Rand // draws one seed pair per request

	faultMu sync.Mutex
	fault   Fault // set at run time; mode none when clear

	served atomic.Pointer[servedOps] // the operations it serves (operations.go)

	// vertex, for a vertex deployment, is its project, location and
	// publisher; cfg.Flavour is then the wire format of its model,
	// Gemini or Anthropic (vertex.go).
	vertex *vertexSite
}

func newDeployment(s *Sim, cfg Deployment, seed int64) *deployment {
	d := &deployment{
		sim:         s,
		cfg:         cfg,
		quota:       newLimiter(s.start, s.cfg.Slice),
		fingerprint: fingerprintFor(cfg.Name),
		tag:         idTag(cfg.Name),
		objects:     newObjects(),
		rng:         rand.New(rand.NewPCG(uint64(seed), hash64("deployment:"+cfg.Name))),
		fault:       Fault{Mode: FaultNone},
	}
	if cfg.Flavour == Vertex {
		d.vertex = newVertexSite(cfg)
		d.cfg.Flavour = d.vertex.wire()
	}
	d.served.Store(newServedOps(cfg.Operations))
	for _, e := range s.cfg.Schedule {
		if e.Deployment == cfg.Name {
			d.schedule = append(d.schedule, e)
		}
	}
	return d
}

// nextRand returns the random source for one request. Each request gets
// its own source seeded from the deployment's, so the decisions of the nth
// request depend only on the seed and n, however many draws other
// requests made.
func (d *deployment) nextRand() *rand.Rand {
	d.rngMu.Lock()
	a, b := d.rng.Uint64(), d.rng.Uint64()
	d.rngMu.Unlock()
	return rand.New(rand.NewPCG(a, b))
}

// setFault sets the run-time fault; f must be valid and defaulted.
func (d *deployment) setFault(f Fault) {
	d.faultMu.Lock()
	d.fault = f
	d.faultMu.Unlock()
}

// faultState reports the set, scheduled and effective faults at now.
func (d *deployment) faultState(now time.Time) FaultState {
	d.faultMu.Lock()
	set := d.fault
	d.faultMu.Unlock()
	st := FaultState{Deployment: d.cfg.Name, Set: set, Scheduled: scheduledAt(d.schedule, now.Sub(d.sim.start))}
	switch {
	case set.active():
		st.Effective = set
	case st.Scheduled != nil:
		st.Effective = *st.Scheduled
	default:
		st.Effective = Fault{Mode: FaultNone}
	}
	return st
}

// faultAt is the fault in force at now: the run-time fault if one is set,
// else the schedule's.
func (d *deployment) faultAt(now time.Time) Fault {
	return d.faultState(now).Effective
}

// limits are the per-minute limits in force under fault f.
func (d *deployment) limits(f Fault) limits {
	l := limits{rpm: d.cfg.Quota.RPM, tpm: d.cfg.Quota.TPM}
	if f.Mode == FaultQuota {
		if f.RPM > 0 {
			l.rpm = f.RPM
		}
		if f.TPM > 0 {
			l.tpm = f.TPM
		}
	}
	return l
}

// keyFrom returns the key the client sent: x-api-key or a Bearer token
// (anthropic; the Go SDK v2 sends its API key as Bearer), x-goog-api-key or
// the key query parameter (gemini), api-key or a Bearer token (azure), a
// Bearer token (openai).
func (d *deployment) keyFrom(r *http.Request) string {
	h := r.Header
	switch {
	case d.vertex != nil:
		// an OAuth access token only
	case d.cfg.Flavour == Anthropic:
		if k := h.Get("X-Api-Key"); k != "" {
			return k
		}
	case d.cfg.Flavour == Gemini:
		if k := h.Get("X-Goog-Api-Key"); k != "" {
			return k
		}
		return r.URL.Query().Get("key")
	case d.cfg.Flavour == Azure:
		if k := h.Get("Api-Key"); k != "" {
			return k
		}
	}
	if v, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

// authorized reports whether key is acceptable.
func (d *deployment) authorized(key string) bool {
	return d.cfg.Key == "" || subtle.ConstantTimeCompare([]byte(key), []byte(d.cfg.Key)) == 1
}
