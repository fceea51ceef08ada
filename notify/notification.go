package notify

import (
	"strconv"
	"strings"
	"time"
)

// Kind says what a Notification reports.
type Kind string

// Notification kinds.
const (
	// KindFailover: the active set moved away from the primary set.
	KindFailover Kind = "failover"
	// KindFailback: the active set is the primary set again.
	KindFailback Kind = "failback"
	// KindChange: the active set moved between sets that are not the
	// primary set (one fallback to another, or to or from no usable
	// backend).
	KindChange Kind = "change"
	// KindFlapping: the active set alternates within the flap window.
	KindFlapping Kind = "flapping"
	// KindStorm: more failovers than the threshold within the storm window.
	KindStorm Kind = "storm"
	// KindAdmin: an operator action, sent by the gateway through
	// [Tracker.Send].
	KindAdmin Kind = "admin"
	// KindMisconfigured: a backend answered 401, 403 or 404 (its key was
	// refused, its deployment does not exist): it is benched and will not
	// heal itself. Sent by the gateway through [Tracker.Send].
	KindMisconfigured Kind = "misconfigured"
	// KindBudget: a key's or team's spend reached 80% or 100% of its
	// budget. Sent by the gateway through [Tracker.Send].
	KindBudget Kind = "budget"
)

// Notification is one message about a pool. Once handed to a Dispatcher or
// a Notify function it must not be modified: sinks read it concurrently.
type Notification struct {
	Kind Kind
	Pool string
	// From and To are the active sets before and after the change, each
	// in the order its members were given to Update. Empty means no usable
	// backend. For "storm", From is the primary set and To the active set
	// (both empty if the pool was never updated).
	From, To []string
	// Reason is why the change happened, as given to Update.
	Reason string
	// At is when it happened.
	At time.Time
	// Text is the human message: from where to where the traffic moved,
	// why, when (RFC 3339, UTC), and for failover and change a reminder to
	// check the quota and the model version of the new backend.
	Text string
	// Details holds extra fields (the Detail* keys): every notification
	// of the tracker has primary; "flapping" has changes, window and sets;
	// the settled one after flapping has settled, changes, window and
	// flapping_since; "storm" has failovers, window and threshold. May be
	// nil.
	Details map[string]string
}

// Details keys.
const (
	DetailChanges       = "changes"        // changes of the active set within the window
	DetailWindow        = "window"         // a duration, such as "2m"
	DetailSets          = "sets"           // the alternating sets, "a | b+c"
	DetailSettled       = "settled"        // "true" on the notification that ends flapping
	DetailFlappingSince = "flapping_since" // RFC 3339
	DetailFailovers     = "failovers"      // failovers within the storm window
	DetailThreshold     = "threshold"      // the storm threshold
	DetailPrimary       = "primary"        // the primary set
)

// setName names a set of backends for a human.
func setName(s []string) string {
	if len(s) == 0 {
		return "no usable backend"
	}
	return strings.Join(s, " + ")
}

// stamp formats an instant for the human text.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// shortDuration prints 2m rather than 2m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// classify says what a move of the active set from from to to is.
func classify(from, to, primary set) Kind {
	switch {
	case to.equal(primary) && len(to.names) > 0:
		return KindFailback
	case from.equal(primary) && len(from.names) > 0:
		return KindFailover
	default:
		return KindChange
	}
}

func reminder(to []string) string {
	if len(to) == 0 {
		return " Requests to this pool fail until a backend is usable again."
	}
	return " Check the quota and the model version of " + setName(to) + "."
}

func reasonText(r string) string {
	if r == "" {
		return "not given"
	}
	return r
}

// composeText writes the human message for n. It is used for notifications
// the tracker makes and for those given to Send without a Text.
func composeText(n Notification) string {
	var b strings.Builder
	switch n.Kind {
	case KindFailover, KindFailback, KindChange:
		if n.Details[DetailSettled] == "true" {
			b.WriteString("Active backend settled on pool " + n.Pool + " after flapping: " + setName(n.From) + " → " +
				setName(n.To) + ", unchanged for " + n.Details[DetailWindow])
		} else {
			b.WriteString("Active backend changed on pool " + n.Pool + ": " + setName(n.From) + " → " + setName(n.To))
		}
		switch n.Kind {
		case KindFailback:
			b.WriteString(" (failback: traffic is back on the primary).")
		case KindFailover:
			b.WriteString(" (failover: traffic left the primary).")
		default:
			b.WriteString(" (the primary is not in use).")
		}
		if c := n.Details[DetailChanges]; c != "" && n.Details[DetailSettled] == "true" {
			b.WriteString(" " + c + " changes while flapping since " + n.Details[DetailFlappingSince] + ".")
		}
		b.WriteString(" Reason: " + reasonText(n.Reason) + ". At " + stamp(n.At) + ".")
		if n.Kind != KindFailback {
			b.WriteString(reminder(n.To))
		}
	case KindFlapping:
		b.WriteString("Active backend is flapping on pool " + n.Pool + ": traffic alternates between " +
			strings.ReplaceAll(n.Details[DetailSets], " | ", " and ") + ", " + n.Details[DetailChanges] +
			" changes within " + n.Details[DetailWindow] + "; last " + setName(n.From) + " → " + setName(n.To) +
			". Reason: " + reasonText(n.Reason) + ". At " + stamp(n.At) + ". Further changes are summarised at most once per " +
			n.Details[DetailWindow] + " until the pool is stable for " + n.Details[DetailWindow] + ".")
		// Remind of the fallbacks the traffic visits, not of the primary.
		var visited []string
		for _, name := range strings.Split(n.Details[DetailSets], " | ") {
			if name != "" && name != n.Details[DetailPrimary] && name != setName(nil) {
				visited = append(visited, name)
			}
		}
		if len(visited) > 0 {
			b.WriteString(" Check the quota and the model version of " + strings.Join(visited, " and ") + ".")
		}
	case KindStorm:
		b.WriteString("Failover storm on pool " + n.Pool + ": " + n.Details[DetailFailovers] +
			" requests failed over within " + n.Details[DetailWindow] + " (threshold " + n.Details[DetailThreshold] + ").")
		if len(n.From) > 0 || len(n.To) > 0 {
			b.WriteString(" Traffic is on " + setName(n.To) + "; the primary is " + setName(n.From) + ".")
		}
		b.WriteString(" At " + stamp(n.At) + ". Check the providers' status and decide whether to reprioritise the pool.")
	default:
		what := "Operator action"
		if n.Kind != KindAdmin {
			what = "Notification (" + string(n.Kind) + ")"
		}
		b.WriteString(what + " on pool " + n.Pool + ": " + reasonText(n.Reason) + ". At " + stamp(n.At) + ".")
	}
	return b.String()
}

// alternation lists sets for DetailSets.
func alternation(sets []set) string {
	names := make([]string, len(sets))
	for i, s := range sets {
		names[i] = setName(s.names)
	}
	return strings.Join(names, " | ")
}

func itoa(n int) string { return strconv.Itoa(n) }
