package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/route"
)

// TestAnotherKeyCannotCompactAStoredResponse: responses/compact is a call
// like responses, and the previous_response_id it names is the caller's
// or no one's: key B gets the 404 of an unknown id for key A's response,
// and no backend hears of it; without a key 401; A compacts it.
func TestAnotherKeyCannotCompactAStoredResponse(t *testing.T) {
	e := startOwners(t)
	id := idOf(t, ownCall(t, e, "POST", "/v1/responses", keyA, `{"model":"chat-prod","input":"hi"}`))
	owner, _, _ := route.UntagID(id)
	compact := `{"model":"chat-prod","previous_response_id":"%s"}`
	fake := forge(id)
	never := ownCall(t, e, "POST", "/v1/responses/compact", keyB, strings.Replace(compact, "%s", fake, 1))
	calls := e.sim.Stats()[owner].Calls
	notFoundLike(t, "compact", ownCall(t, e, "POST", "/v1/responses/compact", keyB, strings.Replace(compact, "%s", id, 1)), id, never, fake)
	if after := e.sim.Stats()[owner].Calls; after != calls {
		t.Errorf("another key's compaction reached the backend")
	}
	if a := ownCall(t, e, "POST", "/v1/responses/compact", "", strings.Replace(compact, "%s", id, 1)); a.status != http.StatusUnauthorized {
		t.Errorf("without a key: %d %s", a.status, a.body)
	}
	a := ownCall(t, e, "POST", "/openai/v1/responses/compact", keyA, strings.Replace(compact, "%s", id, 1))
	if a.status != http.StatusOK || !strings.Contains(a.body, `"response.compaction"`) {
		t.Fatalf("the owner's compaction: %d %s", a.status, a.body)
	}
}
