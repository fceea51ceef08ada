package sim

import "time"

// ScheduledFault switches a fault on for one deployment from From to To,
// both measured from the start of the sim on its [Clock]. The fault in force
// is worked out from the clock when each request arrives, so nothing runs in
// the background and a fake clock drives schedules in tests.
type ScheduledFault struct {
	// Deployment is the Name of the deployment. Required.
	Deployment string `yaml:"deployment"`
	// From is when the fault starts, relative to sim start. Default 0.
	From time.Duration `yaml:"from"`
	// To is when it ends (exclusive). 0, the default, means never.
	To time.Duration `yaml:"to"`
	// Fault is the fault in force in [From, To).
	Fault Fault `yaml:"fault"`
}

// covers reports whether the entry is in force at elapsed time t.
func (s ScheduledFault) covers(t time.Duration) bool {
	return t >= s.From && (s.To == 0 || t < s.To)
}

// scheduledAt returns the fault in force for a deployment at elapsed time t:
// the first matching entry in config order, or nil.
func scheduledAt(entries []ScheduledFault, t time.Duration) *Fault {
	for i := range entries {
		if entries[i].covers(t) {
			f := entries[i].Fault
			return &f
		}
	}
	return nil
}
