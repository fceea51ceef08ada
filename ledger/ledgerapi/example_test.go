package ledgerapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// The handler on a mux of its own, over a SQLite ledger: create a key,
// then check its secret as the gateway would. In the gateway the routes
// share the admin API's mux and its guard (admin key, Host and Origin).
func ExampleHandler() {
	dir, _ := os.MkdirTemp("", "ledgerapi")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	h := &ledgerapi.Handler{
		Store:    store,
		Pools:    func() []string { return []string{"chat-prod", "embed"} },
		OnChange: func() { fmt.Println("keys changed: refresh the gateway's key index") },
		Logger:   slog.New(slog.DiscardHandler),
	}
	mux := http.NewServeMux()
	h.Register(mux)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/admin/keys",
		strings.NewReader(`{"name":"app-team","pools":["chat-prod"],"tpm":"200k","budget":"50/month"}`)))
	var created struct {
		Key    ledgerapi.KeyView
		Secret string
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &created); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Code, created.Key.Name, created.Key.TPM, created.Key.Budget, created.Key.BudgetPeriod, created.Key.State)

	k, err := ledger.Verify(ctx, store, created.Secret, time.Now())
	fmt.Println(k.ID == created.Key.ID, err)
	// Output:
	// keys changed: refresh the gateway's key index
	// 201 app-team 200000 50 month active
	// true <nil>
}
