package route

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/translate"
)

// realtimeHeaders are the client's headers of a WebSocket upgrade that go
// upstream with it; the provider adds the backend's credential.
var realtimeHeaders = []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions", "Openai-Beta"}

// insecureKeyProtocol is the subprotocol prefix browsers use to send an
// API key (they cannot set headers on a WebSocket): the gateway's key,
// never forwarded, in whatever case it is written.
const insecureKeyProtocol = "openai-insecure-api-key"

// credentialParams are the query parameters (compared in any case) that
// may carry a caller's credential: none goes upstream, whatever the
// gateway accepts as a key. The backend's own credential is set by its
// provider.
var credentialParams = []string{"api-key", "api_key", "apikey", "key", "x-api-key", "x-goog-api-key",
	"access_token", "token", "auth", "authorization", "bearer", "subscription-key", "ocp-apim-subscription-key",
	"password", "secret", "client_secret"}

// prepareRealtime builds the upgrade request of a realtime session for
// member m: GET realtime under the backend's API root (Azure's v1 API),
// the model or deployment in the query, the client's WebSocket headers,
// and a subprotocol list without any key in it. No credential of the
// caller's goes upstream: its headers are not copied (only
// realtimeHeaders), a subprotocol naming a key and the query parameters
// of credentialParams are dropped in any case.
func prepareRealtime(r *Request, m *Member, model string, o *Outgoing) error {
	prov := m.Backend.Provider
	if prov.Format() != translate.OpenAI {
		return &translate.UnsupportedError{Target: prov.Format(), Feature: "realtime sessions"}
	}
	q, _ := url.ParseQuery(r.RawQuery)
	for k := range q {
		if slices.ContainsFunc(credentialParams, func(c string) bool { return strings.EqualFold(k, c) }) ||
			strings.EqualFold(k, "deployment") || strings.EqualFold(k, "api-version") || strings.EqualFold(k, "model") {
			delete(q, k)
		}
	}
	q.Set("model", model)
	h := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}
	for _, k := range realtimeHeaders {
		if vv := r.Header.Values(k); len(vv) > 0 {
			h[k] = vv
		}
	}
	var protos []string
	for _, v := range r.Header.Values("Sec-Websocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !isKeyProtocol(p) {
				protos = append(protos, p)
			}
		}
	}
	if len(protos) > 0 {
		h.Set("Sec-Websocket-Protocol", strings.Join(protos, ", "))
	}
	*o = Outgoing{Op: Realtime, Model: model, Header: h, Method: http.MethodGet, Path: string(Realtime), RawQuery: q.Encode()}
	return nil
}

// isKeyProtocol reports whether a subprotocol carries an API key
// (openai-insecure-api-key.KEY, in any case).
func isKeyProtocol(p string) bool {
	return len(p) >= len(insecureKeyProtocol) && strings.EqualFold(p[:len(insecureKeyProtocol)], insecureKeyProtocol)
}

// upgraded is the connection of a session a backend switched protocols
// for; closing it ends the attempt.
type upgraded struct {
	io.ReadWriteCloser
	release func()
}

func (u *upgraded) Close() error {
	err := u.ReadWriteCloser.Close()
	u.release()
	return err
}

var errNoConnection = errors.New("switchover: the backend switched protocols but gave no connection")

// switched takes a 101 Switching Protocols: the session is under way, the
// attempt a success; no bound of the attempt's applies to a session, which
// lasts as long as its two ends keep it.
func (p *Pool) switched(resp *http.Response, a *Attempt, at *attempt) (*http.Response, Attempt, error) {
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return at.failed(a, errNoConnection)
	}
	a.Duration = at.gotFirstByte()
	a.Reason = ReasonOK
	at.armed.And(^dueWhole)
	stop(at.tm.whole)
	at.record(breaker.Outcome{Result: breaker.Success})
	resp.Body = &upgraded{ReadWriteCloser: rwc, release: at.release}
	return resp, *a, nil
}
