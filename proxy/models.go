package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/switchover-gw/switchover/route"
)

// model is an entry of the model list.
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// listModels is the stage that answers GET /v1/models and
// /v1/models/{id}, which are not logged.
func listModels(x *exchange) error {
	x.logged = false
	w := x.w
	w.Header().Set("Content-Type", "application/json")
	if id := x.rel; id != "" {
		p, ok := x.rt.Pools[id]
		if !ok || !x.mayList(p, id) {
			return requestError(http.StatusNotFound, "model_not_found", fmt.Sprintf("The model %q does not exist on this gateway", truncate(id, 100)))
		}
		json.NewEncoder(w).Encode(model{ID: p.Name, Object: "model", OwnedBy: "switchover"})
		return nil
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, name := range x.rt.Models {
		if !x.mayList(x.rt.Pools[name], name) {
			continue
		}
		list.Data = append(list.Data, model{ID: name, Object: "model", OwnedBy: "switchover"})
	}
	json.NewEncoder(w).Encode(list)
	return nil
}

// mayList reports whether the caller may see the model name of pool p:
// a key limited to some pools or models sees only those it may use, as
// another key's pools are none of its business.
func (x *exchange) mayList(p *route.Pool, name string) bool {
	who := x.lg.who
	if who == nil || !who.Restricted() {
		return true
	}
	pool := ""
	if p != nil {
		pool = p.Name
	}
	return who.Allows(pool, name)
}
