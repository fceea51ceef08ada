package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
)

type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func serveModels(w http.ResponseWriter, rt *Routes, id string) {
	w.Header().Set("Content-Type", "application/json")
	if id != "" {
		p, ok := rt.Pools[id]
		if !ok {
			writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", fmt.Sprintf("The model %q does not exist on this gateway", truncate(id, 100)))
			return
		}
		json.NewEncoder(w).Encode(model{ID: p.Name, Object: "model", OwnedBy: "switchover"})
		return
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, name := range rt.Models {
		list.Data = append(list.Data, model{ID: name, Object: "model", OwnedBy: "switchover"})
	}
	json.NewEncoder(w).Encode(list)
}
