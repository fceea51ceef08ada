package ledgerapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/internal/labels"
	"github.com/switchover-gw/switchover/internal/quantity"
	"github.com/switchover-gw/switchover/ledger"
)

// Key sources, in KeyView.Source.
const (
	SourceStore  = "store"  // created through this API; may be changed here
	SourceConfig = "config" // from the YAML file; read-only here
)

// Key states, in KeyView.State.
const (
	StateActive  = "active"
	StateRevoked = "revoked"
	StateExpired = "expired"
)

// KeyView is a key as the API shows it: its fields (never the hash),
// where it comes from and whether it works now.
type KeyView struct {
	ledger.Key
	// Patience is the key's default wait for quota, as "30s"; absent when
	// it has none.
	Patience string `json:"patience,omitempty"`
	Source   string `json:"source"`
	State    string `json:"state"`
}

func view(k ledger.Key, source string, now time.Time) KeyView {
	state := StateActive
	switch {
	case !k.Revoked.IsZero():
		state = StateRevoked
	case !k.Expires.IsZero() && !now.Before(k.Expires):
		state = StateExpired
	}
	k.Hash, k.PrevHash = nil, nil
	if !k.InGrace(now) { // a lapsed previous secret is nothing to show
		k.PrevPrefix, k.PrevUntil = "", time.Time{}
	}
	v := KeyView{Key: k, Source: source, State: state}
	if k.Patience > 0 {
		v.Patience = k.Patience.String()
	}
	return v
}

// keyBody is the body of POST /admin/keys and PATCH /admin/keys/{id}.
// Absent or null fields are left alone (on creation: none, unlimited).
// The fields typed any take a number or a string ("200k", "50/month").
type keyBody struct {
	Name          *string   `json:"name"`
	Team          *string   `json:"team"`
	Pools         *[]string `json:"pools"`
	Models        *[]string `json:"models"`
	RPM           any       `json:"rpm"`
	TPM           any       `json:"tpm"`
	MaxConcurrent any       `json:"max_concurrent"`
	Budget        any       `json:"budget"`
	BudgetUSD     any       `json:"budget_usd"`
	BudgetPeriod  any       `json:"budget_period"`
	// SoftBudget is an alert threshold below the budget, in USD.
	SoftBudget any `json:"soft_budget"`
	// Budgets are budgets of one pool each: [{"pool":"o3","budget":
	// "5/day"}]; [] removes them.
	Budgets *[]poolBudgetBody `json:"budgets"`
	Expires any               `json:"expires"`
	// Patience is a duration ("30s", "2m"); "", "none" or 0 removes it.
	Patience any `json:"patience"`
	// Cache is the key's own response cache settings, which win over
	// its pools': {"ttl":"10m","coalesce":true,"max_wait":"5s",
	// "max_entry":"1MiB"} (each optional; see internal/cachepolicy);
	// null or "none" removes them (the key follows its pools'). Absent:
	// left alone.
	Cache json.RawMessage `json:"cache"`
	// RequestLog is the key's own request log settings, which win over
	// its pools': {"bodies":true,"max_body_bytes":65536} (each optional;
	// see parseKeyRequestLog); null or "none" removes them (the key
	// follows its pools'). Absent: left alone.
	RequestLog json.RawMessage `json:"request_log"`
	// Tags and Metadata replace the key's (see labels for their bounds);
	// [] and {} remove them.
	Tags     *[]string          `json:"tags"`
	Metadata *map[string]string `json:"metadata"`
}

// maxPatience bounds a key's patience; a pool's max_wait_limit caps it
// further.
const maxPatience = 24 * time.Hour

// maxConcurrent bounds max_concurrent, which is an int.
const maxConcurrent = 1 << 30

// apply changes k by the fields of b.
func (h *Handler) apply(k *ledger.Key, b keyBody, now time.Time) error {
	var err error
	if b.Name != nil {
		k.Name = strings.TrimSpace(*b.Name)
		if err := checkName("name", k.Name); err != nil {
			return err
		}
	}
	if b.Team != nil {
		k.Team = strings.TrimSpace(*b.Team)
		if err := checkName("team", k.Team); err != nil {
			return err
		}
	}
	if b.Pools != nil {
		if k.Pools, err = names("pools", *b.Pools, h.Pools); err != nil {
			return err
		}
	}
	if b.Models != nil {
		if k.Models, err = names("models", *b.Models, h.Models); err != nil {
			return err
		}
	}
	if b.Tags != nil {
		if k.Tags, err = labels.Tags(*b.Tags); err != nil {
			return badField("tags", "%v", err)
		}
	}
	if b.Metadata != nil {
		if err := labels.Metadata(*b.Metadata); err != nil {
			return badField("metadata", "%v", err)
		}
		k.Metadata = *b.Metadata
		if len(k.Metadata) == 0 {
			k.Metadata = nil
		}
	}
	if b.RPM != nil {
		if k.RPM, err = count("rpm", b.RPM); err != nil {
			return err
		}
	}
	if b.TPM != nil {
		if k.TPM, err = count("tpm", b.TPM); err != nil {
			return err
		}
	}
	if b.MaxConcurrent != nil {
		n, err := count("max_concurrent", b.MaxConcurrent)
		if err != nil {
			return err
		}
		if n > maxConcurrent {
			return badField("max_concurrent", "%d is too large", n)
		}
		k.MaxConcurrent = int(n)
	}
	bu := budget{usd: k.Budget, period: k.BudgetPeriod}
	if err := bu.apply(b.Budget, b.BudgetUSD, b.BudgetPeriod); err != nil {
		return err
	}
	k.Budget, k.BudgetPeriod = bu.usd, bu.period
	if err := soft(b.SoftBudget, &k.SoftBudget, k.Budget); err != nil {
		return err
	}
	if b.Budgets != nil {
		if k.Budgets, err = h.poolBudgets(*b.Budgets); err != nil {
			return err
		}
	}
	if b.Expires != nil {
		if k.Expires, err = expiry(b.Expires, now); err != nil {
			return err
		}
	}
	if b.Cache != nil {
		p, err := cachepolicy.ParseJSON(b.Cache)
		var pr *cachepolicy.Problem
		if errors.As(err, &pr) {
			field := "cache"
			if pr.Field != "" {
				field += "." + pr.Field
			}
			return badField(field, "%s", pr.Message)
		}
		if err != nil {
			return badField("cache", "%v", err)
		}
		k.Cache = p
	}
	if b.RequestLog != nil {
		l, err := parseKeyRequestLog(b.RequestLog)
		if err != nil {
			return err
		}
		k.RequestLog = l
	}
	if b.Patience != nil {
		switch v := b.Patience.(type) {
		case string:
			switch v = strings.TrimSpace(v); v {
			case "", "none", "0":
				k.Patience = 0
			default:
				d, err := time.ParseDuration(v)
				if err != nil || d < 0 || d > maxPatience {
					return badField("patience", "%q is not a wait such as 30s or 2m (at most 24h)", v)
				}
				k.Patience = d
			}
		case float64:
			if v != 0 {
				return badField("patience", "write a duration such as \"30s\", not a number")
			}
			k.Patience = 0
		default:
			return badField("patience", "write a duration such as \"30s\"")
		}
	}
	return nil
}

// keyAnswer is the answer of every key route but the list; Secret only
// on creation and rotation.
type keyAnswer struct {
	Key    KeyView `json:"key"`
	Secret string  `json:"secret,omitempty"`
}

func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	var b keyBody
	if err := decode(r, &b); err != nil {
		h.fail(w, r, err)
		return
	}
	if b.Name == nil || strings.TrimSpace(*b.Name) == "" {
		h.fail(w, r, badField("name", "required: a label for people, such as the team or application"))
		return
	}
	now := h.now()
	var k ledger.Key
	if err := h.apply(&k, b, now); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.checkTeam(r, s, k.Team); err != nil {
		h.fail(w, r, err)
		return
	}
	k, secret, err := ledger.NewKey(r.Context(), s, k, now)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.logAction(r, "create", k)
	h.changed()
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, keyAnswer{Key: view(k, SourceStore, now), Secret: secret})
}

// listKeys answers GET /admin/keys; ?tag=T (repeatable) keeps the keys
// that have every tag given.
func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	tags := r.URL.Query()["tag"]
	for _, t := range tags {
		if err := labels.CheckTag(t); err != nil {
			h.fail(w, r, badField("tag", "%v", err))
			return
		}
	}
	ks, err := s.Keys(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	now := h.now()
	out := make([]KeyView, 0, len(ks))
	add := func(k ledger.Key, source string) {
		for _, t := range tags {
			if !slices.Contains(k.Tags, t) {
				return
			}
		}
		out = append(out, view(k, source, now))
	}
	for _, k := range ks {
		add(k, SourceStore)
	}
	if h.Static != nil {
		for _, k := range h.Static() {
			add(k, SourceConfig)
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Keys []KeyView `json:"keys"`
	}{out})
}

// errReadOnly: a key of the config file cannot be changed here, nor a
// revoked key rotated.
var errReadOnly = errors.New("read-only")

// find returns key id, from the store or the config.
func (h *Handler) find(r *http.Request, s ledger.Store, id string) (ledger.Key, string, error) {
	ks, err := s.Keys(r.Context())
	if err != nil {
		return ledger.Key{}, "", err
	}
	for _, k := range ks {
		if k.ID == id {
			return k, SourceStore, nil
		}
	}
	if h.Static != nil && id != "" {
		for _, k := range h.Static() {
			if k.ID == id {
				return k, SourceConfig, nil
			}
		}
	}
	return ledger.Key{}, "", fmt.Errorf("%w: no key has the ID %q", ledger.ErrNotFound, id)
}

// findStored returns key id from the store; a key of the config is
// errReadOnly.
func (h *Handler) findStored(r *http.Request, s ledger.Store, id string) (ledger.Key, error) {
	k, source, err := h.find(r, s, id)
	if err == nil && source == SourceConfig {
		err = fmt.Errorf("%w: key %s (%s) is defined in the config file; change it there", errReadOnly, k.ID, k.Name)
	}
	return k, err
}

func (h *Handler) showKey(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	k, source, err := h.find(r, s, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, keyAnswer{Key: view(k, source, h.now())})
}

func (h *Handler) updateKey(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	var b keyBody
	if err := decode(r, &b); err != nil {
		h.fail(w, r, err)
		return
	}
	if b.Name != nil && strings.TrimSpace(*b.Name) == "" {
		h.fail(w, r, badField("name", "must not be empty"))
		return
	}
	k, err := h.findStored(r, s, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	now := h.now()
	if err := h.apply(&k, b, now); err != nil {
		h.fail(w, r, err)
		return
	}
	if b.Team != nil {
		if err := h.checkTeam(r, s, k.Team); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if err := s.UpdateKey(r.Context(), k); err != nil {
		h.fail(w, r, err)
		return
	}
	h.logAction(r, "update", k)
	h.changed()
	writeJSON(w, http.StatusOK, keyAnswer{Key: view(k, SourceStore, now)})
}

// rotateBody is the optional body of POST /admin/keys/{id}/rotate.
type rotateBody struct {
	// Grace is how long the old secret keeps working ("10m", "36h",
	// "7d", at most maxGrace); absent, "", "0" or "none": it stops at
	// once.
	Grace *string `json:"grace"`
}

// maxGrace bounds a rotation's grace period.
const maxGrace = 30 * 24 * time.Hour

// grace reads the grace period of a rotation from r's body, if any.
func grace(r *http.Request) (time.Duration, error) {
	if r.ContentLength == 0 {
		return 0, nil
	}
	var b rotateBody
	if err := decode(r, &b); err != nil {
		return 0, err
	}
	if b.Grace == nil {
		return 0, nil
	}
	switch v := strings.TrimSpace(*b.Grace); v {
	case "", "0", "none":
		return 0, nil
	default:
		d, err := quantity.ParseAge(v)
		if err != nil || d > maxGrace {
			return 0, badField("grace", "%q is not a time such as 10m, 36h or 7d (at most 30d)", v)
		}
		return d, nil
	}
}

func (h *Handler) rotateKey(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	g, err := grace(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	k, err := h.findStored(r, s, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !k.Revoked.IsZero() {
		h.fail(w, r, fmt.Errorf("%w: key %s (%s) is revoked; a new secret would not work: create a new key", errReadOnly, k.ID, k.Name))
		return
	}
	var keepOld time.Time
	if g > 0 {
		keepOld = h.now().Add(g)
	}
	secret, err := ledger.Rotate(r.Context(), s, k.ID, keepOld)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// Read back the key, for its new prefix.
	if k, err = h.findStored(r, s, k.ID); err != nil {
		h.fail(w, r, err)
		return
	}
	h.logAction(r, "rotate", k)
	h.changed()
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, keyAnswer{Key: view(k, SourceStore, h.now()), Secret: secret})
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	k, err := h.findStored(r, s, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	now := h.now()
	if err := s.RevokeKey(r.Context(), k.ID, now); err != nil {
		h.fail(w, r, err)
		return
	}
	if k, err = h.findStored(r, s, k.ID); err != nil { // revoking twice keeps the first time
		h.fail(w, r, err)
		return
	}
	h.logAction(r, "revoke", k)
	h.changed()
	writeJSON(w, http.StatusOK, keyAnswer{Key: view(k, SourceStore, now)})
}

// logAction records a change of a key, naming who made it: its ID and
// name, never its secret, hash or prefix.
func (h *Handler) logAction(r *http.Request, action string, k ledger.Key) {
	what := "key " + k.ID
	if k.Name != "" {
		what += " (" + k.Name + ")"
	}
	h.record(r, "key:"+action, what, "key", k.ID, "name", k.Name, "team", k.Team, "tags", k.Tags)
}
