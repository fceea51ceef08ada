package gateway

// LimitSyncs returns how many times this replica exchanged its keys'
// rate-limit use with the fleet (tests wait on it instead of the clock).
func (g *Gateway) LimitSyncs() int64 { return g.ten.lim.Syncs() }
