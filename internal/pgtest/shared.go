package pgtest

import (
	"os"
	"sync"
	"testing"
)

// shared is the test binary's one server of Shared, started at its first
// call and stopped by Main.
var shared struct {
	mu   sync.Mutex
	main bool // Main runs the tests
	srv  *Server
	base string
	err  error
}

// Main runs the tests of a package that uses Shared, then stops the
// shared server and removes its files, and returns m.Run's exit code.
// Call it from the package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	if shared.base != "" {
		os.RemoveAll(shared.base)
	}
	return code
}

// Shared returns the DSN of a new, empty database on the one PostgreSQL
// server that every test of the binary calling Shared shares: initdb and
// a start take seconds on a busy machine, a database milliseconds. The
// server is started at the first call and stopped when the tests end
// (Main, which the package's TestMain must call; without it Shared fails
// the test rather than leave a server behind). Tests that stop, restart
// or reconfigure the server take one of their own (StartServer); what a
// test does inside its database (FailWrites) stays there. A binary that
// dies without returning from m.Run (go test's -timeout panic, a kill)
// leaves the server running in the temporary directory
// (pgtest-shared-*), to be stopped by hand. Safe for concurrent use.
func Shared(t testing.TB) string {
	t.Helper()
	bin := binOrSkip(t)
	shared.mu.Lock()
	if !shared.main {
		shared.mu.Unlock()
		t.Fatal("pgtest: Shared needs the package's TestMain to call pgtest.Main, which stops the server")
	}
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = startShared(bin)
	}
	s, err := shared.srv, shared.err
	shared.mu.Unlock()
	if err != nil {
		t.Fatalf("pgtest: the shared server: %v", err)
	}
	return s.NewDatabase(t)
}

// startShared starts the shared server in a directory of its own. Requires
// shared.mu held.
func startShared(bin string) (*Server, error) {
	base, err := os.MkdirTemp("", "pgtest-shared-")
	if err != nil {
		return nil, err
	}
	shared.base = base
	// MkdirTemp's directory is 0700; its parent (the temporary directory)
	// is open to all already.
	s, err := newServer(bin, base, base)
	if err != nil {
		if s != nil {
			s.Stop()
		}
		return nil, err
	}
	return s, nil
}
