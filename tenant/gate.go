package tenant

import "context"

// Gate is a Directory and a Limiter together: what the gateway's handler
// asks of each request (proxy.Tenants).
type Gate struct {
	Directory *Directory
	Limiter   *Limiter
}

// Required reports whether callers must present a key.
func (g *Gate) Required() bool { return g.Directory.Required() }

// Authenticate returns the key whose secret was presented.
func (g *Gate) Authenticate(ctx context.Context, secret string) (*Principal, error) {
	return g.Directory.Authenticate(ctx, secret)
}

// Admit runs p's limits and its team's for a request.
func (g *Gate) Admit(p *Principal, pool, model string, tokens int64) (*Ticket, *Refusal) {
	return g.Limiter.Admit(p, pool, model, tokens)
}
