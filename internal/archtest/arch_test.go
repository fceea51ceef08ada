// Package archtest checks the rules of docs/architecture.md about who may
// import what, so that a change that breaks one fails CI instead of
// waiting for the next review.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/switchover-gw/switchover"

// deps lists the packages pkg links, its own included (go list -deps).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestEngineImportsNoThirdPartyModule(t *testing.T) {
	for _, d := range deps(t, "route") {
		first := strings.SplitN(d, "/", 2)[0]
		if strings.Contains(first, ".") && !strings.HasPrefix(d, module+"/") {
			t.Errorf("route links %s: the engine must stay free of third-party modules", d)
		}
	}
}

func TestRequestPathLinksNoDatabaseDriver(t *testing.T) {
	for _, pkg := range []string{"proxy", "tenant", "ledger", "engine"} {
		for _, d := range deps(t, pkg) {
			if strings.HasPrefix(d, "modernc.org/sqlite") || strings.HasPrefix(d, "github.com/jackc/pgx") {
				t.Errorf("%s links the database driver %s (drivers live in ledger/sqlite and ledger/postgres)", pkg, d)
			}
		}
	}
}

func TestHarnessesBuildTheEngineNotAGateway(t *testing.T) {
	for _, pkg := range []string{"load", "gameday", "engine", "proxy", "route"} {
		for _, d := range deps(t, pkg) {
			if d == module+"/gateway" {
				t.Errorf("%s links the gateway: build the engine (package engine) instead", pkg)
			}
		}
	}
}
