package drill

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// redisReady bounds how long a starting redis-server may take to answer.
const redisReady = 10 * time.Second

// RedisServer is a redis-server the drill runs on a free loopback port,
// without persistence, in a temporary directory: Restart brings it back
// empty, as a restart without persistence does. It is safe for
// concurrent use.
type RedisServer struct {
	bin  string
	dir  string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
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
	s := &RedisServer{bin: path, dir: dir}
	var lastErr error
	for range 5 { // a free port can be taken before the server binds it
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			lastErr = err
			break
		}
		s.port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("start %s on loopback: %w", bin, lastErr)
}

// URL is the server's redis:// address.
func (s *RedisServer) URL() string { return "redis://" + s.addr() }

func (s *RedisServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Restart kills the server (SIGKILL, as a crash would) and starts it
// again, empty, on the same port; it returns once it answers PING.
func (s *RedisServer) Restart() error {
	s.kill()
	return s.start()
}

// Close stops the server and removes its directory.
func (s *RedisServer) Close() error {
	s.kill()
	return os.RemoveAll(s.dir)
}

func (s *RedisServer) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

func (s *RedisServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--dir", s.dir)
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	if err := waitPong(s.addr(), done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return err
	}
	s.cmd, s.done = cmd, done
	return nil
}

// waitPong polls addr with PING until it answers PONG, the process exits
// (done closed) or redisReady passes.
func waitPong(addr string, done <-chan struct{}) error {
	deadline := time.Now().Add(redisReady)
	for {
		select {
		case <-done:
			return fmt.Errorf("redis-server on %s exited before answering PING", addr)
		default:
		}
		err := ping(addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s: no answer to PING within %v: %w", addr, redisReady, err)
		}
		time.Sleep(10 * time.Millisecond) // polling for readiness, bounded by the deadline
	}
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// ExternalRedis is a Redis server the drill was given by URL: it cannot
// restart it.
type ExternalRedis string

var _ Redis = ExternalRedis("")

// URL is the server's address.
func (r ExternalRedis) URL() string { return string(r) }

// Restart returns ErrNoRestart.
func (ExternalRedis) Restart() error { return ErrNoRestart }
