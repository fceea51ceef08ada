// Package redisserver runs a redis-server process on a free loopback
// port, without persistence, in a directory it is given: for the tests'
// Redis (internal/redistest) and the drill's (drill.StartRedis), which
// wrap it. Stop, Restart, Pause and Resume make Redis go away, come back
// empty on the same address, or stop answering, for tests and drills of
// what clients do meanwhile.
package redisserver

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ReadyTimeout bounds how long a starting server may take to answer
// PING.
const ReadyTimeout = 10 * time.Second

// Server is a redis-server process. It is safe for concurrent use.
type Server struct {
	bin  string
	dir  string
	port int
	// busPort is the cluster bus port of a cluster node; zero for a
	// standalone server.
	busPort int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start runs the redis-server binary bin (a path; see exec.LookPath) in
// dir, which it writes nothing to but a cluster node's nodes.conf, as a
// node of a Redis Cluster when cluster is set, and returns once it
// answers PING. A free port found by listening can be taken by someone
// else before the server binds it: Start tries five.
func Start(bin, dir string, cluster bool) (*Server, error) {
	s := &Server{bin: bin, dir: dir}
	var lastErr error
	for range 5 {
		var err error
		s.port, err = freePort()
		if err == nil && cluster {
			s.busPort, err = freePort()
		}
		if err != nil {
			return nil, err
		}
		if s.busPort == s.port {
			lastErr = fmt.Errorf("port %d picked twice", s.port)
			continue
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// URL returns the server's address as a redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Addr returns the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Stop kills the server (SIGKILL, as a crash would) and waits for it to
// exit; its connections are closed and its data is gone (it keeps none on
// disk). Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Pause freezes the server (SIGSTOP): its connections stay open but it
// answers nothing, as a server stuck or behind a black-holed network
// would. Resume or Stop thaws or kills it. Pausing a stopped server does
// nothing.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server carry on (SIGCONT); what clients sent
// meanwhile is answered then.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// Restart starts the server again, empty, on the same port, and returns
// once it answers PING; a running server is stopped first.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("server already running")
	}
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--dir", s.dir,
	}
	if s.busPort != 0 {
		// The bus port is given rather than left at port+10000, which
		// may be taken or past 65535 for a port of the ephemeral range.
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
			"--cluster-port", strconv.Itoa(s.busPort),
		)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	out := &lockedWriter{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	if err := waitReady(s.Addr(), done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("redis-server on %s: %w\n%s", s.Addr(), err, out.String())
	}
	s.cmd, s.done = cmd, done
	return nil
}

// waitReady polls addr with PING until it answers PONG, the process exits
// (done closed) or ReadyTimeout passes.
func waitReady(addr string, done <-chan struct{}) error {
	deadline := time.Now().Add(ReadyTimeout)
	var err error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("exited before answering PING")
		default:
		}
		if err = Ping(addr); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond) // polling for readiness, bounded by deadline
	}
	return fmt.Errorf("no answer to PING within %v: %v", ReadyTimeout, err)
}

// Ping sends PING to the Redis at addr and returns nil when it answers
// PONG within a second.
func Ping(addr string) error {
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

func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	// Listeners are held until a port not handed out before comes, so
	// that the kernel offers another each time.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range maxPortTries {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		held = append(held, l)
		if port := l.Addr().(*net.TCPAddr).Port; !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("find a free port: %d tries gave ports handed out before", maxPortTries)
}

// handedOut is every port freePort has returned in this process: none is
// returned twice. A cluster node stopped by one test is still gossiped to
// by its live peers; had its port (or bus port) gone to another test's
// node, the two clusters would meet and merge (the flake: a cluster of
// three forming with five known nodes, cluster tests side by side on a
// busy machine, 2026-12-04).
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// maxPortTries bounds freePort's listens.
const maxPortTries = 64

// lockedWriter is the server's output, written by exec's copying
// goroutine and read when start fails.
type lockedWriter struct {
	mu sync.Mutex
	w  bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
