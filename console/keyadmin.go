package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/internal/keytext"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

// KeyManager is implemented by a Gateway whose admin API manages the
// store's keys and teams (ledgerapi). The console's key forms go through
// that API's own handler, so a change made in the page is validated,
// logged, recorded in the timeline and applied exactly as one made with
// `switchover keys`; the console only turns forms into its requests.
type KeyManager interface {
	// KeysAPI is the admin API's handler of /admin/keys and /admin/teams,
	// recording who (never a secret) as the author of every change.
	KeysAPI(who string) http.Handler
}

// newSecret is a secret the API just made (a key created or rotated),
// kept in its session until the page that shows it once.
type newSecret struct {
	Action, ID, Name, Prefix, Secret string
	// GraceUntil is, for a rotation with a grace period, until when the
	// old secret keeps working.
	GraceUntil time.Time
}

// apiError is the admin API's error body.
type apiError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// answer is what a handler wrote: status and body.
type answer struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func (a *answer) Header() http.Header         { return a.header }
func (a *answer) Write(b []byte) (int, error) { return a.body.Write(b) }
func (a *answer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

// callKeysAPI sends one request to the admin API's key routes on behalf
// of the session's user and decodes its answer into out; the error is the
// API's own message (a field's problem, an unknown key, a store failure
// with its request id).
func (c *Console) callKeysAPI(ctx context.Context, km KeyManager, who, method, path string, body any, out any) error {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	a := &answer{header: http.Header{}}
	km.KeysAPI(who).ServeHTTP(a, req)
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.status >= 300 {
		var e apiError
		if json.Unmarshal(a.body.Bytes(), &e) == nil && e.Error.Message != "" {
			return errors.New(e.Error.Message)
		}
		return fmt.Errorf("the admin API answered %d", a.status)
	}
	if out != nil {
		return json.Unmarshal(a.body.Bytes(), out)
	}
	return nil
}

// keyManager is the gateway's KeyManager when a store is configured, or
// nil.
func (c *Console) keyManager() KeyManager {
	km, ok := c.gw.(KeyManager)
	if !ok {
		return nil
	}
	if l, ok := c.gw.(Ledgered); !ok || l.Ledger() == nil {
		return nil
	}
	return km
}

// keyForm turns a key form into the admin API's body. Only the fields
// the form has are sent. On creation an empty field is left out (none,
// all, the pools'); on an edit it removes the limit or setting (0,
// "none", "never", an empty list), since the form shows every one in
// force. The settings written as text (cache, request log, budgets of a
// pool, metadata) are read as switchover keys reads them; what they say
// is checked again by the API.
func keyForm(r *http.Request, create bool) (map[string]any, error) {
	b := map[string]any{}
	field := func(name string) (string, bool) {
		v, ok := r.PostForm[name]
		if !ok || (create && strings.TrimSpace(v[0]) == "") {
			return "", false
		}
		return strings.TrimSpace(v[0]), true
	}
	text := func(name, none string) {
		if v, ok := field(name); ok {
			if v == "" {
				v = none
			}
			b[name] = v
		}
	}
	if v, ok := field("name"); ok && v != "" { // a key keeps a name
		b["name"] = v
	}
	text("team", "")
	for _, f := range []string{"pools", "models", "tags"} {
		if v, ok := field(f); ok {
			b[f] = keytext.List(v) // [] on an edit: all, none
		}
	}
	for _, f := range []string{"rpm", "tpm", "max_concurrent"} {
		text(f, "0")
	}
	text("budget", "none")
	text("soft_budget", "none")
	text("patience", "none")
	text("expires", "never")
	var errs []error
	if v, ok := field("pool_budgets"); ok {
		bs, err := keytext.ParsePoolBudgets(v)
		errs = append(errs, fieldErr("budgets of a pool", err))
		b["budgets"] = bs
	}
	if v, ok := field("metadata"); ok {
		m, err := keytext.ParseMetadata(v)
		errs = append(errs, fieldErr("metadata", err))
		b["metadata"] = m
	}
	if v, ok := field("cache"); ok {
		p, err := cachepolicy.Parse(v)
		errs = append(errs, fieldErr("cache", err))
		b["cache"] = p // nil: null, the pools' cache
	}
	if v, ok := field("request_log"); ok {
		l, err := keytext.ParseRequestLog(v) // "" and none: nil
		errs = append(errs, fieldErr("request log", err))
		b["request_log"] = l // nil: null, the pools' setting
	}
	return b, errors.Join(errs...)
}

// fieldErr names the form's field in err (nil stays nil).
func fieldErr(field string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", field, err)
}

// keysBack is where every key form goes back to.
const keysBack = "/console/keys"

// keyDone ends a key form: with a new secret, to the page that shows it
// once; else back to the keys page with what happened.
func (c *Console) keyDone(w http.ResponseWriter, r *http.Request, s *session, tok, what string, err error, secret *newSecret) {
	if err != nil {
		c.log.Warn("console: key change failed", "user", s.User, "change", what, "error", err)
		c.sessions.flash(tok, "Failed: "+what+": "+err.Error())
		http.Redirect(w, r, keysBack, http.StatusSeeOther)
		return
	}
	c.log.Info("console: key change", "user", s.User, "change", what)
	if secret != nil {
		c.sessions.keepSecret(tok, secret)
		http.Redirect(w, r, "/console/keys/secret", http.StatusSeeOther)
		return
	}
	c.sessions.flash(tok, "Done: "+what+".")
	http.Redirect(w, r, keysBack, http.StatusSeeOther)
}

// keyAuthor is who the admin API records for a change made in the page.
func keyAuthor(r *http.Request, s *session) string {
	return s.User + " in the console from " + remoteIP(r)
}

// keyManagerFor is the KeyManager for a form, or a refusal written.
func (c *Console) keyManagerFor(w http.ResponseWriter) KeyManager {
	km := c.keyManager()
	if km == nil {
		http.Error(w, "no key store configured: keys cannot be managed", http.StatusConflict)
	}
	return km
}

// keyCreate creates a key from the create form.
func (c *Console) keyCreate(w http.ResponseWriter, r *http.Request, s *session, tok string) {
	km := c.keyManagerFor(w)
	if km == nil {
		return
	}
	var a struct {
		Key    ledgerapi.KeyView `json:"key"`
		Secret string            `json:"secret"`
	}
	what := "create key " + strings.TrimSpace(r.PostFormValue("name"))
	body, err := keyForm(r, true)
	if err == nil {
		err = c.callKeysAPI(r.Context(), km, keyAuthor(r, s), "POST", "/admin/keys", body, &a)
	}
	var ns *newSecret
	if err == nil {
		ns = &newSecret{Action: "created", ID: a.Key.ID, Name: a.Key.Name, Prefix: a.Key.Prefix, Secret: a.Secret}
	}
	c.keyDone(w, r, s, tok, what, err, ns)
}

// keyID is the form's key ID, checked to be a path segment.
func keyID(r *http.Request) string {
	return url.PathEscape(strings.TrimSpace(r.PostFormValue("id")))
}

// keyEdit changes a key's limits and settings.
func (c *Console) keyEdit(w http.ResponseWriter, r *http.Request, s *session, tok string) {
	km := c.keyManagerFor(w)
	if km == nil {
		return
	}
	id := keyID(r)
	body, err := keyForm(r, false)
	if err == nil {
		err = c.callKeysAPI(r.Context(), km, keyAuthor(r, s), "PATCH", "/admin/keys/"+id, body, nil)
	}
	c.keyDone(w, r, s, tok, "change key "+r.PostFormValue("id"), err, nil)
}

// keyRotate gives a key a new secret, the old one working for the grace
// period given.
func (c *Console) keyRotate(w http.ResponseWriter, r *http.Request, s *session, tok string) {
	km := c.keyManagerFor(w)
	if km == nil {
		return
	}
	var a struct {
		Key    ledgerapi.KeyView `json:"key"`
		Secret string            `json:"secret"`
	}
	body := map[string]string{"grace": strings.TrimSpace(r.PostFormValue("grace"))}
	err := c.callKeysAPI(r.Context(), km, keyAuthor(r, s), "POST", "/admin/keys/"+keyID(r)+"/rotate", body, &a)
	var ns *newSecret
	if err == nil {
		ns = &newSecret{Action: "rotated", ID: a.Key.ID, Name: a.Key.Name, Prefix: a.Key.Prefix, Secret: a.Secret, GraceUntil: a.Key.PrevUntil}
	}
	c.keyDone(w, r, s, tok, "rotate key "+r.PostFormValue("id"), err, ns)
}

// keyRevoke revokes a key.
func (c *Console) keyRevoke(w http.ResponseWriter, r *http.Request, s *session, tok string) {
	km := c.keyManagerFor(w)
	if km == nil {
		return
	}
	err := c.callKeysAPI(r.Context(), km, keyAuthor(r, s), "POST", "/admin/keys/"+keyID(r)+"/revoke", nil, nil)
	c.keyDone(w, r, s, tok, "revoke key "+r.PostFormValue("id"), err, nil)
}

// teamPut creates a team or replaces its limits.
func (c *Console) teamPut(w http.ResponseWriter, r *http.Request, s *session, tok string) {
	km := c.keyManagerFor(w)
	if km == nil {
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	b := map[string]any{}
	for _, f := range []string{"rpm", "tpm", "budget", "soft_budget"} {
		if v := strings.TrimSpace(r.PostFormValue(f)); v != "" {
			b[f] = v
		}
	}
	err := errors.New("name: a team needs a name")
	if name != "" {
		err = c.callKeysAPI(r.Context(), km, keyAuthor(r, s), "PUT", "/admin/teams/"+url.PathEscape(name), b, nil)
	}
	c.keyDone(w, r, s, tok, "set team "+name, err, nil)
}

// keySecretPage shows a new secret once: the session forgets it as the
// page is rendered, so a reload or a later visit shows it no more.
func (c *Console) keySecretPage(w http.ResponseWriter, r *http.Request, s *session) {
	ck, _ := r.Cookie(cookieName)
	ns := c.sessions.takeSecret(ck.Value)
	if ns == nil {
		http.Redirect(w, r, keysBack, http.StatusSeeOther)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	c.render(w, http.StatusOK, "keysecret", s, ns)
}
