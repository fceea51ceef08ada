// Package redistest runs a real redis-server for tests: on a free
// loopback port, in the test's temporary directory, without persistence,
// stopped when the test ends. StartCluster runs three of them as a Redis
// Cluster.
//
// When redis-server (or, for a cluster, redis-cli) is not on PATH the test
// is skipped, unless the environment variable SWITCHOVER_REQUIRE_REDIS is
// "1" (CI sets it), in which case it fails.
package redistest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchover-gw/switchover/internal/redisserver"
)

// Start starts a redis-server for t and returns its URL
// (redis://127.0.0.1:PORT). The server is stopped at t.Cleanup.
func Start(t testing.TB) (url string) {
	t.Helper()
	return StartServer(t).URL()
}

// Server is a redis-server process run for a test
// (redisserver.Server): Stop and Restart make Redis go away and come back
// on the same address, for tests of what clients do meanwhile; Pause and
// Resume make it stop answering without closing its connections. A
// Server is safe for concurrent use.
type Server struct {
	*redisserver.Server
	t testing.TB
}

// StartServer starts a redis-server for t and returns its handle. The
// server is stopped at t.Cleanup.
func StartServer(t testing.TB) *Server {
	t.Helper()
	return startServer(t, lookPath(t, "redis-server"), false)
}

// lookPath finds program on PATH, or skips (or fails) t.
func lookPath(t testing.TB, program string) string {
	t.Helper()
	bin, err := exec.LookPath(program)
	if err != nil {
		if os.Getenv("SWITCHOVER_REQUIRE_REDIS") == "1" {
			t.Fatalf("redistest: %s is not on PATH and SWITCHOVER_REQUIRE_REDIS=1: %v", program, err)
		}
		t.Skipf("redistest: %s is not on PATH (install it, e.g. apt-get install redis-server; set SWITCHOVER_REQUIRE_REDIS=1 to fail instead of skipping): %v", program, err)
	}
	return bin
}

// startServer starts bin in the test's temporary directory, as a cluster
// node when cluster is set; it is stopped at t.Cleanup.
func startServer(t testing.TB, bin string, cluster bool) *Server {
	t.Helper()
	srv, err := redisserver.Start(bin, t.TempDir(), cluster)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(srv.Stop)
	return &Server{Server: srv, t: t}
}

// Restart starts the server again, empty, on the same port, and returns
// once it answers PING; a running server is stopped first. It fails the
// test if the server cannot start.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.Server.Restart(); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// ping is redisserver.Ping.
func ping(addr string) error { return redisserver.Ping(addr) }

// Client is a go-redis client of url, closed when t ends. It does not
// retry a failed command and dials once, so a test that stops or pauses
// the server sees the failure at once.
func Client(t testing.TB, url string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	o.MaxRetries, o.DialerRetries = -1, 1
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}
