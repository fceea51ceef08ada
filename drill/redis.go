package drill

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/switchover-gw/switchover/internal/redisserver"
)

// RedisServer is a redis-server the drill runs on a free loopback port,
// without persistence, in a temporary directory (redisserver.Server):
// Restart brings it back empty, as a restart without persistence does.
// It is safe for concurrent use.
type RedisServer struct {
	srv *redisserver.Server
	dir string
}

var _ Redis = (*RedisServer)(nil)

// StartRedis runs the redis-server binary bin (looked up on PATH). Close
// stops it.
func StartRedis(bin string) (*RedisServer, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "switchover-drill-redis-")
	if err != nil {
		return nil, err
	}
	srv, err := redisserver.Start(path, dir, false)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s on loopback: %w", bin, err)
	}
	return &RedisServer{srv: srv, dir: dir}, nil
}

// URL is the server's redis:// address.
func (s *RedisServer) URL() string { return s.srv.URL() }

// Restart kills the server (SIGKILL, as a crash would) and starts it
// again, empty, on the same port; it returns once it answers PING.
func (s *RedisServer) Restart() error { return s.srv.Restart() }

// Close stops the server and removes its directory.
func (s *RedisServer) Close() error {
	s.srv.Stop()
	return os.RemoveAll(s.dir)
}

// ExternalRedis is a Redis server the drill was given by URL: it cannot
// restart it.
type ExternalRedis string

var _ Redis = ExternalRedis("")

// URL is the server's address.
func (r ExternalRedis) URL() string { return string(r) }

// Restart returns ErrNoRestart.
func (ExternalRedis) Restart() error { return ErrNoRestart }
