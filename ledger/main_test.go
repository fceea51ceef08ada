package ledger_test

import (
	"os"
	"testing"

	"github.com/switchover-gw/switchover/internal/pgtest"
)

// TestMain stops the PostgreSQL server the tests share (pgtest.Shared).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
