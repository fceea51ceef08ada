package sim

import (
	"fmt"
	"strings"
	"time"
)

// FaultMode names a way a deployment misbehaves.
type FaultMode string

// The fault modes.
const (
	// FaultNone answers normally. The empty mode means the same.
	FaultNone FaultMode = "none"
	// FaultDown answers 503 at once with the flavour's error body
	// (anthropic, which documents no 503, answers 529 overloaded_error).
	FaultDown FaultMode = "down"
	// FaultOverloaded answers at once the way an overloaded service does:
	// anthropic 529 overloaded_error, gemini 503 UNAVAILABLE "The model is
	// overloaded", azure and openai their 503.
	FaultOverloaded FaultMode = "overloaded"
	// FaultError500 answers 500 at once with the flavour's error body.
	FaultError500 FaultMode = "error500"
	// FaultBlackhole reads the request and never answers, until the client
	// gives up or the sim closes. A stream under way when it begins sends
	// nothing more (an Azure stream may have sent only its
	// prompt_filter_results).
	FaultBlackhole FaultMode = "blackhole"
	// FaultReset closes the TCP connection with an RST and no response.
	FaultReset FaultMode = "reset"
	// FaultSlow multiplies every latency draw by Factor.
	FaultSlow FaultMode = "slow"
	// FaultStallStream sends the first After events of a stream, then sends
	// nothing more and holds the connection open until the client gives up
	// or the sim closes. Non-streamed requests are answered normally.
	FaultStallStream FaultMode = "stall_stream"
	// FaultDropStream sends the first After events of a stream, then closes
	// the connection mid-stream. Non-streamed requests are answered normally.
	FaultDropStream FaultMode = "drop_stream"
	// FaultQuota replaces the deployment's RPM and/or TPM (a temporary
	// quota cut); usage already counted in the slice still counts.
	FaultQuota FaultMode = "quota"
	// FaultErrorRate fails a fraction Rate of requests with Status (500 or
	// 503; 0 picks either with equal chance), drawn from the seeded source.
	FaultErrorRate FaultMode = "error_rate"
	// FaultUnauthorized answers at once as the flavour answers a revoked
	// key: azure, openai and anthropic 401; gemini, which answers a bad
	// key with 400 API_KEY_INVALID, that.
	FaultUnauthorized FaultMode = "unauthorized"
	// FaultForbidden answers 403 at once with the flavour's permission
	// error.
	FaultForbidden FaultMode = "forbidden"
	// FaultNotFound answers 404 at once for the configured deployment or
	// model, as for a deleted deployment: azure DeploymentNotFound, openai
	// model_not_found, anthropic not_found_error, gemini NOT_FOUND.
	FaultNotFound FaultMode = "not_found"
	// FaultTruncateStream sends the first After events of a stream that
	// carry no finish (no finish_reason, stop_reason or finishReason), then
	// ends the response cleanly without the stream's end ([DONE],
	// message_stop, gemini's last chunk). Non-streamed requests are
	// answered normally.
	FaultTruncateStream FaultMode = "truncate_stream"
	// FaultShortBody answers a non-streamed request with headers promising
	// the whole body (Content-Length) but sends only its first
	// ShortBodyBytes bytes, then closes the connection. Streams are
	// answered normally.
	FaultShortBody FaultMode = "short_body"
	// FaultKeepaliveHang answers a stream with 200 and SSE comments
	// (": keep-alive"), one at once and then one a second on the sim's
	// clock (when that clock has timers, as the system clock and
	// fakeclock do; otherwise only the first), and never a data event,
	// until the client gives up or the sim closes. Non-streamed requests
	// are answered normally.
	FaultKeepaliveHang FaultMode = "keepalive_hang"
	// FaultSlowErrorBody answers 503 at once with its headers flushed
	// (Content-Length promising the flavour's 503 body) but never sends
	// the body, holding the connection until the client gives up or the
	// sim closes.
	FaultSlowErrorBody FaultMode = "slow_error_body"
)

// ShortBodyBytes is how much of the body short_body sends.
const ShortBodyBytes = 50

// KeepaliveInterval is the gap between keep-alive comments of
// keepalive_hang, on the sim's clock.
const KeepaliveInterval = time.Second

// faultModes lists every mode, for validation messages.
var faultModes = []FaultMode{
	FaultNone, FaultDown, FaultOverloaded, FaultError500, FaultBlackhole, FaultReset, FaultSlow,
	FaultStallStream, FaultDropStream, FaultQuota, FaultErrorRate, FaultUnauthorized, FaultForbidden,
	FaultNotFound, FaultTruncateStream, FaultShortBody, FaultKeepaliveHang, FaultSlowErrorBody,
}

// Defaults for fault parameters.
const (
	DefaultSlowFactor  = 5
	DefaultStreamAfter = 3
)

// Fault is a fault mode and its parameters. The zero value is no fault. It is
// the JSON body of the control API and the `fault` of a schedule entry.
type Fault struct {
	// Mode is the fault mode; "" means none.
	Mode FaultMode `json:"mode" yaml:"mode"`
	// Factor multiplies latency for mode slow. Default 5; must be > 0.
	Factor float64 `json:"factor,omitempty" yaml:"factor"`
	// Rate is the fraction of requests failed by mode error_rate, in [0, 1].
	Rate float64 `json:"rate,omitempty" yaml:"rate"`
	// Status is the status error_rate fails with: 500, 503, or 0 (the
	// default) for either with equal chance.
	Status int `json:"status,omitempty" yaml:"status"`
	// RPM and TPM replace the deployment's limits for mode quota; 0 keeps
	// the deployment's own limit. At least one must be set.
	RPM int `json:"rpm,omitempty" yaml:"rpm"`
	TPM int `json:"tpm,omitempty" yaml:"tpm"`
	// After is how many SSE events stall_stream, drop_stream and
	// truncate_stream send before they stall, drop or end. Default 3; must
	// be >= 0 (0 means the default).
	After int `json:"after,omitempty" yaml:"after"`
}

// active reports whether f changes anything.
func (f Fault) active() bool { return f.Mode != "" && f.Mode != FaultNone }

// withDefaults fills in defaulted parameters. It does not validate.
func (f Fault) withDefaults() Fault {
	switch f.Mode {
	case "":
		f.Mode = FaultNone
	case FaultSlow:
		if f.Factor == 0 {
			f.Factor = DefaultSlowFactor
		}
	case FaultStallStream, FaultDropStream, FaultTruncateStream:
		if f.After == 0 {
			f.After = DefaultStreamAfter
		}
	}
	return f
}

// validate checks f after defaults; errors are *FieldError with a path
// relative to the fault.
func (f Fault) validate() error {
	f = f.withDefaults()
	bad := func(path, format string, args ...any) error {
		return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	switch f.Mode {
	case FaultNone, FaultDown, FaultOverloaded, FaultError500, FaultBlackhole, FaultReset,
		FaultUnauthorized, FaultForbidden, FaultNotFound, FaultShortBody, FaultKeepaliveHang, FaultSlowErrorBody:
	case FaultSlow:
		if f.Factor <= 0 || f.Factor > 1000 {
			return bad("factor", "must be in (0, 1000], got %g", f.Factor)
		}
	case FaultStallStream, FaultDropStream, FaultTruncateStream:
		if f.After < 0 {
			return bad("after", "must not be negative")
		}
	case FaultQuota:
		if f.RPM < 0 || f.TPM < 0 {
			return bad("rpm", "rpm and tpm must not be negative")
		}
		if f.RPM == 0 && f.TPM == 0 {
			return bad("rpm", "a quota fault needs rpm or tpm")
		}
	case FaultErrorRate:
		if f.Rate < 0 || f.Rate > 1 {
			return bad("rate", "must be in [0, 1], got %g", f.Rate)
		}
		if f.Status != 0 && f.Status != 500 && f.Status != 503 {
			return bad("status", "must be 500, 503 or 0 (either), got %d", f.Status)
		}
	default:
		names := make([]string, len(faultModes))
		for i, m := range faultModes {
			names[i] = string(m)
		}
		return bad("mode", "unknown mode %q (want one of %s)", f.Mode, strings.Join(names, ", "))
	}
	return nil
}

// FaultState is what the control API reports for a deployment: the fault set
// at run time, the scheduled fault in force now, and the one that applies.
type FaultState struct {
	Deployment string `json:"deployment"`
	// Set is the fault set through the control API or [Sim.SetFault];
	// mode none when cleared.
	Set Fault `json:"fault"`
	// Scheduled is the schedule entry's fault in force now, or nil.
	Scheduled *Fault `json:"scheduled"`
	// Effective is the fault requests get now: Set if it is active, else
	// Scheduled, else none.
	Effective Fault `json:"effective"`
}
