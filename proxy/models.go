package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// model is an entry of the model list.
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// listModels is the stage that answers GET /v1/models and
// /v1/models/{id}, which are not logged; Gemini's /v1beta/models and
// /v1beta/models/{id} in Google's shape (listGeminiModels).
func listModels(x *exchange) error {
	x.logged = false
	if x.format == translate.Gemini {
		return listGeminiModels(x)
	}
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

// geminiModel is an entry of Gemini's model list: the pool, as Google's
// SDKs read a model. The gateway knows no token limits, so
// inputTokenLimit and outputTokenLimit are left out.
type geminiModel struct {
	Name                       string   `json:"name"`
	DisplayName                string   `json:"displayName"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
}

// Gemini's model list: pageSize's default and largest value, as Google's.
const (
	geminiPageSize    = 50
	maxGeminiPageSize = 1000
)

// listGeminiModels answers Gemini's model list, GET /v1beta/models (one
// entry per pool the key may use, pageSize and pageToken as Google's),
// and a model's get, /v1beta/models/{id} (a pool's name or alias; 404
// NOT_FOUND for a name the key may not see, as for one that does not
// exist). Errors go out in Google's shape (x.format).
func listGeminiModels(x *exchange) error {
	if id := x.rel; id != "" {
		p, ok := x.rt.Pools[id]
		if !ok || !x.mayList(p, id) {
			return requestError(http.StatusNotFound, "not_found", fmt.Sprintf("models/%s is not found on this gateway", truncate(id, 100)))
		}
		x.w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(x.w).Encode(geminiModelOf(p))
		return nil
	}
	q := x.r.URL.Query()
	size := geminiPageSize
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return requestError(http.StatusBadRequest, "invalid_request", "switchover: pageSize must be a whole number, 0 or more")
		}
		if n > 0 {
			size = min(n, maxGeminiPageSize)
		}
	}
	from := 0
	if v := q.Get("pageToken"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return requestError(http.StatusBadRequest, "invalid_request", "switchover: pageToken is not one this gateway gave")
		}
		from = n
	}
	list := struct {
		Models        []geminiModel `json:"models"`
		NextPageToken string        `json:"nextPageToken,omitempty"`
	}{Models: []geminiModel{}}
	seen := 0
	for _, name := range x.rt.Models {
		p := x.rt.Pools[name]
		if p == nil || !x.mayList(p, name) {
			continue
		}
		seen++
		switch {
		case seen <= from:
		case len(list.Models) < size:
			list.Models = append(list.Models, geminiModelOf(p))
		default:
			list.NextPageToken = strconv.Itoa(from + size)
		}
		if list.NextPageToken != "" {
			break
		}
	}
	x.w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(x.w).Encode(list)
	return nil
}

// geminiModelOf is pool p as an entry of Gemini's model list: the
// methods the gateway serves on it, the embedding ones when it has an
// OpenAI-format member to take them.
func geminiModelOf(p *route.Pool) geminiModel {
	m := geminiModel{Name: geminiAPIPrefix + p.Name, DisplayName: p.Name,
		SupportedGenerationMethods: []string{gmGenerate, gmStream, gmCountTokens}}
	for _, mem := range p.Members {
		if mem.Backend != nil && mem.Backend.Provider != nil && mem.Backend.Provider.Format() == translate.OpenAI {
			m.SupportedGenerationMethods = append(m.SupportedGenerationMethods, gmEmbed, gmBatchEmbed)
			break
		}
	}
	return m
}
