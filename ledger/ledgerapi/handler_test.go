package ledgerapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// now is the handler's clock in every test: Tuesday 1 December 2026.
var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func openSQLite(t *testing.T) ledger.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eachStore runs f against SQLite and against a real PostgreSQL (skipped
// when PostgreSQL is not installed; see pgtest).
func eachStore(t *testing.T, f func(t *testing.T, s ledger.Store)) {
	t.Run("sqlite", func(t *testing.T) { f(t, openSQLite(t)) })
	t.Run("postgres", func(t *testing.T) {
		s, err := postgres.Open(context.Background(), pgtest.Shared(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

// env is a Handler served by an httptest server, with its log and the
// number of OnChange calls.
type env struct {
	t       *testing.T
	h       *ledgerapi.Handler
	srv     *httptest.Server
	log     *syncbuf.Buffer
	changes atomic.Int64
}

func newEnv(t *testing.T, s ledger.Store, configure ...func(*ledgerapi.Handler)) *env {
	t.Helper()
	e := &env{t: t, log: &syncbuf.Buffer{}}
	e.h = &ledgerapi.Handler{
		Store:    s,
		Now:      func() time.Time { return now },
		OnChange: func() { e.changes.Add(1) },
		Logger:   slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, c := range configure {
		c(e.h)
	}
	mux := http.NewServeMux()
	e.h.Register(mux)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// do sends body (a string of JSON, or "" for none) and returns the status
// and the raw answer.
func (e *env) do(method, path, body string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// json calls do, wants status want, and decodes the answer into v.
func (e *env) json(method, path, body string, want int, v any) []byte {
	e.t.Helper()
	code, raw := e.do(method, path, body)
	if code != want {
		e.t.Fatalf("%s %s %s = %d %s; want %d", method, path, body, code, raw, want)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return raw
}

type keyAnswer struct {
	Key    ledgerapi.KeyView `json:"key"`
	Secret string            `json:"secret"`
}

// badField is a request the API must refuse as a bad field: 400, type
// invalid_request_error, param naming the field and the message starting
// with it.
type badField struct {
	name, method, body, param string
}

// refusesBadFields sends each of tests, a PATCH to the key id or a POST
// of a new key, and checks the API refuses it as badField says.
func (e *env) refusesBadFields(t *testing.T, id string, tests []badField) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/admin/keys"
			if tc.method == "PATCH" {
				path += "/" + id
			}
			var a struct {
				Error struct{ Message, Type, Param string } `json:"error"`
			}
			raw := e.json(tc.method, path, tc.body, http.StatusBadRequest, &a)
			if a.Error.Type != "invalid_request_error" || a.Error.Param != tc.param || !strings.HasPrefix(a.Error.Message, tc.param+": ") {
				t.Fatalf("answered %s; want type invalid_request_error, param %s", raw, tc.param)
			}
		})
	}
}

type errorAnswer struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// TestNoStore: without a store every route answers 409 with the way to
// configure one.
func TestNoStore(t *testing.T) {
	e := newEnv(t, nil, func(h *ledgerapi.Handler) {
		h.Static = func() []ledger.Key { return []ledger.Key{{ID: "cfg_1", Name: "app"}} }
	})
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/admin/keys", `{"name":"a"}`},
		{"GET", "/admin/keys", ""},
		{"GET", "/admin/keys/key_x", ""},
		{"PATCH", "/admin/keys/key_x", `{"rpm":1}`},
		{"POST", "/admin/keys/key_x/rotate", ""},
		{"POST", "/admin/keys/key_x/revoke", ""},
		{"GET", "/admin/teams", ""},
		{"PUT", "/admin/teams/infra", `{}`},
		{"GET", "/admin/usage", ""},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			var a errorAnswer
			e.json(c.method, c.path, c.body, http.StatusConflict, &a)
			if want := "no store configured; add store: {sqlite: FILE} or {postgres: URL} to the config"; a.Error.Message != want {
				t.Fatalf("message %q, want %q", a.Error.Message, want)
			}
		})
	}
	if n := e.changes.Load(); n != 0 {
		t.Errorf("OnChange called %d times without a store", n)
	}
}

// TestNilHooks: a Handler with only a Store works (no clock, logger or
// OnChange given).
func TestNilHooks(t *testing.T) {
	h := &ledgerapi.Handler{Store: openSQLite(t)}
	mux := http.NewServeMux()
	h.Register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/admin/keys", bytes.NewBufferString(`{"name":"a","expires":"1d"}`)))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", rec.Code, rec.Body)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("an answer with a secret has Cache-Control %q, want no-store", cc)
	}
	var a keyAnswer
	json.Unmarshal(rec.Body.Bytes(), &a)
	if d := time.Until(a.Key.Expires); d < 23*time.Hour || d > 25*time.Hour {
		t.Fatalf("expires %v, want about a day from now (time.Now)", a.Key.Expires)
	}
}

// failingStore fails to list keys, as a database that is down would.
type failingStore struct{ ledger.Store }

// errDown is a driver's error, naming the database as drivers do.
var errDown = errors.New(`failed to connect to user=switchover database=ledger host=db.internal port=5432: connection refused`)

func (failingStore) Keys(context.Context) ([]ledger.Key, error) { return nil, errDown }

// TestStoreFailure: the store's failure is a 500 with a message that
// gives a request id, never the driver's text (regression, issue 23: it
// named the database's user, name, host and port); the driver's text is
// logged at error level under that id; nothing changes and OnChange is
// not called.
func TestStoreFailure(t *testing.T) {
	e := newEnv(t, failingStore{openSQLite(t)})
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/admin/keys", ""},
		{"GET", "/admin/keys/key_x", ""},
		{"PATCH", "/admin/keys/key_x", `{"rpm":1}`},
		{"POST", "/admin/keys/key_x/rotate", ""},
	} {
		var a errorAnswer
		e.json(c.method, c.path, c.body, http.StatusInternalServerError, &a)
		// The id is random hex (it once held "5432"): the text before it
		// must give nothing away, and the id be hex alone.
		text, id, ok := strings.Cut(a.Error.Message, "request_id ")
		if !ok || id == "" || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("%s %s: message %q has no request id of hex alone", c.method, c.path, a.Error.Message)
		}
		for _, leak := range []string{"switchover", "ledger", "db.internal", "5432", "connection refused"} {
			if strings.Contains(text, leak) {
				t.Errorf("%s %s: message %q gives away %q", c.method, c.path, a.Error.Message, leak)
			}
		}
		if !strings.Contains(e.log.String(), `request_id=`+id+` err="failed to connect to user=switchover`) {
			t.Errorf("the failure is not logged under request_id %s:\n%s", id, e.log)
		}
	}
	if n := e.changes.Load(); n != 0 {
		t.Errorf("OnChange called %d times", n)
	}
	if !strings.Contains(e.log.String(), `level=ERROR msg="ledger admin API: store failed" method=GET path=/admin/keys`) {
		t.Errorf("the failure is not logged:\n%s", e.log)
	}
}

// Regression (issue 23, Low): a NUL byte in a key or team name gave
// PostgreSQL's raw 500 (SQLite stored it); names had no length limit (a
// 60,000-character name made keys list print 458 MB); control
// characters were stored and echoed. Each is a 400 naming the field, in
// both stores, and nothing is stored.
func TestKeyAndTeamNamesWithNULControlCharactersOrLengthAreRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		e := newEnv(t, s)
		var made keyAnswer
		e.json("POST", "/admin/keys", `{"name":"Équipe données ✓"}`, http.StatusCreated, &made)
		long := strings.Repeat("n", 60000)
		for _, c := range []struct{ name, method, path, body, field string }{
			{"NUL in a key name", "POST", "/admin/keys", `{"name":"a\u0000b"}`, "name"},
			{"escape sequence in a key name", "POST", "/admin/keys", `{"name":"x\u001b[31mred"}`, "name"},
			{"bidi override in a key name", "POST", "/admin/keys", `{"name":"abc\u202edcba"}`, "name"},
			{"a 60,000-byte key name", "POST", "/admin/keys", `{"name":"` + long + `"}`, "name"},
			{"NUL in a key's team", "POST", "/admin/keys", `{"name":"ok","team":"t\u0000"}`, "team"},
			{"NUL in a key's pool", "POST", "/admin/keys", `{"name":"ok","pools":["p\u0000"]}`, "pools[0]"},
			{"NUL in a renamed key", "PATCH", "/admin/keys/" + made.Key.ID, `{"name":"a\u0000"}`, "name"},
			{"NUL in a team name", "PUT", "/admin/teams/a%00b", `{}`, "name"},
			{"a long team name", "PUT", "/admin/teams/" + strings.Repeat("t", 129), `{}`, "name"},
		} {
			t.Run(c.name, func(t *testing.T) {
				var a errorAnswer
				e.json(c.method, c.path, c.body, http.StatusBadRequest, &a)
				if !strings.HasPrefix(a.Error.Message, c.field+": ") {
					t.Fatalf("message %q does not start with the field %s", a.Error.Message, c.field)
				}
				if strings.ContainsAny(a.Error.Message, "\x00\x1b\u202e") || len(a.Error.Message) > 200 {
					t.Fatalf("message echoes the name: %q", a.Error.Message)
				}
			})
		}
		var list struct {
			Keys []ledgerapi.KeyView `json:"keys"`
		}
		e.json("GET", "/admin/keys", "", http.StatusOK, &list)
		if len(list.Keys) != 1 || list.Keys[0].Name != "Équipe données ✓" {
			t.Fatalf("stored keys %+v, want only the valid one", list.Keys)
		}
		var teams struct {
			Teams []ledger.Team `json:"teams"`
		}
		e.json("GET", "/admin/teams", "", http.StatusOK, &teams)
		if len(teams.Teams) != 0 {
			t.Fatalf("stored teams %+v", teams.Teams)
		}
	})
}

// TestEveryChangeNamesItsActor is the regression test of issue 23's item
// 12 for keys and teams: their changes named nobody. Now every change
// (create, update, rotate, revoke, team set) passes Actor's answer to
// OnAction and logs it, and no secret.
func TestEveryChangeNamesItsActor(t *testing.T) {
	type call struct{ action, who string }
	var calls []call
	e := newEnv(t, openSQLite(t), func(h *ledgerapi.Handler) {
		h.Actor = func(r *http.Request) string { return "alice at " + r.Method + " " + r.URL.Path }
		h.OnAction = func(action, what, who string) { calls = append(calls, call{action, who}) }
	})
	var created, rotated keyAnswer
	e.json("POST", "/admin/keys", `{"name":"app"}`, http.StatusCreated, &created)
	id := created.Key.ID
	e.json("PATCH", "/admin/keys/"+id, `{"rpm":10}`, http.StatusOK, nil)
	e.json("POST", "/admin/keys/"+id+"/rotate", "", http.StatusOK, &rotated)
	e.json("POST", "/admin/keys/"+id+"/revoke", "", http.StatusOK, nil)
	e.json("PUT", "/admin/teams/research", `{"rpm":5}`, http.StatusOK, nil)
	want := []call{
		{"key:create", "alice at POST /admin/keys"},
		{"key:update", "alice at PATCH /admin/keys/" + id},
		{"key:rotate", "alice at POST /admin/keys/" + id + "/rotate"},
		{"key:revoke", "alice at POST /admin/keys/" + id + "/revoke"},
		{"team:put", "alice at PUT /admin/teams/research"},
	}
	if len(calls) != len(want) {
		t.Fatalf("OnAction got %v, want %v", calls, want)
	}
	log := e.log.String()
	for i, c := range want {
		if calls[i] != c {
			t.Errorf("change %d: OnAction got %v, want %v", i+1, calls[i], c)
		}
		if line := "action=" + c.action; !strings.Contains(log, line) || !strings.Contains(log, `by="`+c.who+`"`) {
			t.Errorf("the log does not name who made %s: %s", c.action, log)
		}
	}
	for _, s := range []string{created.Secret, rotated.Secret} {
		if s == "" || strings.Contains(log, s) {
			t.Errorf("a secret is in the log (or was not returned): %q", s)
		}
	}
}

// patchStep is one PATCH of a key's setting and what the setting is
// after it.
type patchStep[T any] struct {
	name, body string
	want       T
}

// patchSteps PATCHes key c's settings step by step and checks the
// setting (read by get) after each: in the answer, in the store (the
// key its secret verifies as) and in GET /admin/keys/{id}. want is what
// it is before the first step.
func patchSteps[T any](t *testing.T, e *env, s ledger.Store, c keyAnswer, get func(ledger.Key) T, want T, steps []patchStep[T]) {
	t.Helper()
	id := c.Key.ID
	stored := func(step string, want T) {
		t.Helper()
		got, err := ledger.Verify(t.Context(), s, c.Secret, now)
		if err != nil || !reflect.DeepEqual(get(got), want) {
			t.Fatalf("%s: the store has %+v (%v), want %+v", step, get(got), err, want)
		}
		var shown keyAnswer
		e.json("GET", "/admin/keys/"+id, "", http.StatusOK, &shown)
		if !reflect.DeepEqual(get(shown.Key.Key), want) {
			t.Fatalf("%s: GET shows %+v, want %+v", step, get(shown.Key.Key), want)
		}
	}
	stored("created", want)
	for _, st := range steps {
		var a keyAnswer
		e.json("PATCH", "/admin/keys/"+id, st.body, http.StatusOK, &a)
		if !reflect.DeepEqual(get(a.Key.Key), st.want) {
			t.Fatalf("%s: PATCH %s answered %+v, want %+v", st.name, st.body, get(a.Key.Key), st.want)
		}
		stored(st.name, st.want)
	}
}
