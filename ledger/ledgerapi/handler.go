// Package ledgerapi is the admin HTTP API of virtual keys, teams and
// usage kept in a ledger.Store: create, list, change, rotate and revoke
// keys, set teams' limits, and read spend as JSON or CSV.
//
// The handler does no authentication of its own: mount it behind the
// gateway's admin guard (admin key, Host and Origin checks), as every
// other admin route is.
package ledgerapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// Handler serves the admin routes of keys, teams and usage (see Register).
// All fields are optional. A Handler is safe for concurrent use once
// registered; its fields must not change afterwards.
type Handler struct {
	// Store keeps the keys, teams and usage. Nil: every route answers 409
	// with a message saying how to configure a store.
	Store ledger.Store
	// Now is the clock, for relative expiries ("90d"), revocation times,
	// key states and the default usage period. Nil: time.Now.
	Now func() time.Time
	// OnChange is called after a key or team was created, changed,
	// rotated or revoked, once the store has it, so that the gateway
	// refreshes its key index at once rather than at its next poll. It is
	// called on the request's goroutine, before the answer is written:
	// keep it short. Nil: nothing is called.
	OnChange func()
	// Pools returns the configured pool names; a key's pools must be
	// among them. Nil: pools are not checked.
	Pools func() []string
	// Models returns the model names callers may ask for (pool names and
	// aliases); a key's models must be among them. Nil: not checked.
	Models func() []string
	// Static returns the keys of the YAML configuration, listed read-only
	// with "source":"config"; they cannot be changed here. Their Hash is
	// never shown. Nil: none.
	Static func() []ledger.Key
	// StaticTeams returns the teams of the YAML configuration, listed
	// read-only with "source":"config" (they win over a store's team of
	// the same name, which therefore cannot be set here). A key may name
	// them. Nil: none.
	StaticTeams func() []ledger.Team
	// OnAction, if set, is told of each change: its action ("key:create",
	// "key:update", "key:rotate", "key:revoke", "team:put"), what it
	// changed ("key key_… (name)", "team research"), never a secret, and
	// who changed it (Actor's answer, "" without one); for the gateway's
	// events and metrics. Nil: only logged.
	OnAction func(action, what, who string)
	// Actor names who makes a change, from its request (which passed the
	// admin guard): the gateway's "admin key (as NAME) from ADDRESS". It
	// is recorded in the log line ("by") and passed to OnAction. It must
	// not return a secret. Nil: changes name nobody.
	Actor func(r *http.Request) string
	// Logger gets one Warn line per change of a key or team (its ID and
	// name, who made it, never a secret or hash) and the store's
	// failures. Nil: slog.Default().
	Logger *slog.Logger
}

// Register adds the routes to mux:
//
//	POST  /admin/keys               create a key; 201 {"key","secret"}
//	GET   /admin/keys               {"keys":[...]}: the store's, then the config's
//	GET   /admin/keys/{id}          {"key"}
//	PATCH /admin/keys/{id}          change some fields; {"key"}
//	POST  /admin/keys/{id}/rotate   a new secret; {"key","secret"}; {"grace":"10m"}
//	                                keeps the old one working that long
//	POST  /admin/keys/{id}/revoke   {"key"}
//	GET   /admin/teams              {"teams":[...]}: the store's and the config's
//	PUT   /admin/teams/{name}       create or replace a team of the store; {"team"}
//	GET   /admin/usage              spend over a period, JSON or CSV
//	GET   /admin/usage/requests     one row per request, newest first, paged
//	                                by an opaque cursor; JSON or CSV
//	GET   /admin/usage/requests/{id} one request with its attempts
//
// Errors are {"error":{"message":"..."}}: 400 for bad input (the message
// starts with the field), 404 for an unknown key, 409 without a store, for a team of the config or
// for a key of the config file, 500 when the store fails (a message with
// a request id; the store's error, which may name the database, is only
// logged). Names of keys and teams, pools and models are at most
// MaxNameLen bytes of UTF-8 without control characters (400).
func (h *Handler) Register(mux *http.ServeMux) {
	route := func(pattern string, f func(http.ResponseWriter, *http.Request, ledger.Store)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if h.Store == nil {
				writeError(w, http.StatusConflict, errNoStore)
				return
			}
			f(w, r, h.Store)
		})
	}
	route("POST /admin/keys", h.createKey)
	route("GET /admin/keys", h.listKeys)
	route("GET /admin/keys/{id}", h.showKey)
	route("PATCH /admin/keys/{id}", h.updateKey)
	route("POST /admin/keys/{id}/rotate", h.rotateKey)
	route("POST /admin/keys/{id}/revoke", h.revokeKey)
	route("GET /admin/teams", h.listTeams)
	route("PUT /admin/teams/{name}", h.putTeam)
	route("GET /admin/usage", h.usage)
	route("GET /admin/usage/requests", h.requests)
	route("GET /admin/usage/requests/{id}", h.request)
}

var errNoStore = errors.New("no store configured; add store: {sqlite: FILE} or {postgres: URL} to the config")

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// record logs a change and tells OnAction of it, naming its actor; args
// are the log line's attributes (never a secret).
func (h *Handler) record(r *http.Request, action, what string, args ...any) {
	who := ""
	if h.Actor != nil {
		who = h.Actor(r)
	}
	h.logger().Warn("admin action", append(append([]any{"action", action}, args...), "by", who)...)
	if h.OnAction != nil {
		h.OnAction(action, what, who)
	}
}

func (h *Handler) changed() {
	if h.OnChange != nil {
		h.OnChange()
	}
}

// fieldError is bad input in one field of a request; its message starts
// with the field's name.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

func badField(field, format string, args ...any) error {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// fail answers err with its status: 400 for bad input, 404 for an
// unknown key, 409 for a conflict, 500 (logged) for the store's failures.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var fe *fieldError
	switch {
	case errors.As(err, &fe), errors.Is(err, ledger.ErrInvalid):
		writeError(w, http.StatusBadRequest, err)
	case errors.Is(err, ledger.ErrNotFound):
		writeError(w, http.StatusNotFound, err)
	case errors.Is(err, ledger.ErrConflict), errors.Is(err, errReadOnly):
		writeError(w, http.StatusConflict, err)
	default:
		// The driver's text may name the database's user, host, port and
		// name: it goes to the log only, found by the request's id.
		id := requestID(r)
		h.logger().Error("ledger admin API: store failed", "method", r.Method, "path", r.URL.Path, "request_id", id, "err", err)
		w.Header().Set("X-Request-Id", id)
		writeError(w, http.StatusInternalServerError, fmt.Errorf("the key store failed; the gateway's log has the cause under request_id %s", id))
	}
}

// requestID is the caller's X-Request-Id when it is short and printable,
// else a new random one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 64 && !strings.ContainsFunc(id, func(c rune) bool { return c <= ' ' || c > '~' }) {
		return id
	}
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// errorBody is an error as OpenAI's API writes one: its message, its
// type ("invalid_request_error" for bad input, "not_found_error",
// "conflict_error", "server_error") and, for bad input in one field, the
// field as param ("cache.ttl").
type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   string `json:"param,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	var b errorBody
	b.Error.Message = err.Error()
	switch {
	case status == http.StatusNotFound:
		b.Error.Type = "not_found_error"
	case status == http.StatusConflict:
		b.Error.Type = "conflict_error"
	case status >= 500:
		b.Error.Type = "server_error"
	default:
		b.Error.Type = "invalid_request_error"
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		b.Error.Param = fe.field
	}
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to do
}

// maxBody bounds a request body.
const maxBody = 1 << 16

// decode reads a JSON object into v, refusing unknown fields and trailing
// data, with numbers kept as json.Number. Errors name the field.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var me *http.MaxBytesError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return badField(te.Field, "expected %s, not a JSON %s", jsonKind(te.Type.Kind().String()), te.Value)
		case errors.As(err, &me):
			return badField("body", "larger than %d bytes", maxBody)
		}
		return badField("body", "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return badField("body", "one JSON object expected, more found")
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice":
		return "a list"
	case "bool":
		return "true or false"
	case "ptr", "interface":
		return "a value"
	}
	return "a " + goKind
}
