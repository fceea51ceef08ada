package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchover-gw/switchover/tenant"
)

// HeaderEndUser names the end user a request is made for, for callers
// that cannot set it in the body (the OpenAI "user", Anthropic's
// metadata.user_id). It wins over the body: a service in front of the
// gateway that knows who its user is can set it whatever the client
// wrote. It is not sent upstream.
const HeaderEndUser = "X-Switchover-End-User"

// findEndUser is the stage that finds the end user the request is made
// for: the X-Switchover-End-User header, else what the body names
// (route.Request.EndUser; an API call's only). The usage record keeps it,
// and the end-user limits of the caller's key and team apply to it
// (admit). An end user longer than tenant.MaxEndUser bytes, or with a
// control character or bytes that are not UTF-8, gets 400: it would be
// cut or mangled in the store, and two end users could become one.
//
// The end user is chosen by the caller and may be an email address: it
// is kept in the usage store, never in the request log or in metrics.
func findEndUser(x *exchange) error {
	u, from := strings.TrimSpace(x.r.Header.Get(HeaderEndUser)), "the "+HeaderEndUser+" header"
	if u == "" && x.kind == pathAPI && x.req != nil {
		u, from = x.req.EndUser(), "the request's end user (\"user\", or metadata.user_id)"
	}
	if u == "" {
		return nil
	}
	if len(u) > tenant.MaxEndUser {
		return requestError(http.StatusBadRequest, "end_user_too_long",
			fmt.Sprintf("switchover: %s is %d bytes long, over the gateway's limit of %d; send a shorter id (a hash of it, for example)", from, len(u), tenant.MaxEndUser))
	}
	if !utf8.ValidString(u) || strings.ContainsFunc(u, unicode.IsControl) {
		return requestError(http.StatusBadRequest, "invalid_end_user",
			fmt.Sprintf("switchover: %s has control characters or is not UTF-8", from))
	}
	x.lg.endUser = u
	return nil
}
